import { Elysia, t } from 'elysia'
import { NoBody, ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { SiteParams } from '../sites/model'
import { AddSshKeyBody, SshGitPush, SshInfo, SshKeyAdded, SshKeyParams, SshKeyView } from './model'
import type { SshService } from '../../domain/ssh'

const tags = ['SSH']

export const sshRoutes = (plugins: ApiPlugins, ssh: SshService) =>
  new Elysia({ name: 'ssh-routes' })
    .use(plugins)
    .get('/sites/:tenant_slug/ssh/', ({ site }) => ssh.info(site), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      response: ok(SshInfo),
      // SSH still being set up, or the container not running for the key agent.
      errors: [409],
      detail: { tags, summary: 'Where and how to connect over SSH (vps and dedicated plans)', operationId: 'getSshInfo' },
    })
    .get('/sites/:tenant_slug/ssh/keys/', ({ site }) => ssh.listKeys(site), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      response: ok(t.Array(SshKeyView)),
      errors: [409],
      detail: { tags, summary: 'List the public keys allowed to log in', operationId: 'listSshKeys' },
    })
    .post('/sites/:tenant_slug/ssh/keys/', ({ site, body }) => ssh.addKey(site, body.public_key), {
      scope: 'write',
      site: 'changeable',
      params: SiteParams,
      body: AddSshKeyBody,
      response: ok(SshKeyAdded),
      detail: { tags, summary: 'Allow a public key to log in (idempotent)', operationId: 'addSshKey' },
    })
    .post('/sites/:tenant_slug/ssh/git/', ({ site }) => ssh.enableGitPush(site), {
      scope: 'write',
      site: 'changeable',
      params: SiteParams,
      body: NoBody,
      response: ok(SshGitPush),
      // SSH still being set up; DEPLOYMENT_RUNNING: a deployment of the site is queued or running.
      errors: [409],
      detail: {
        tags,
        summary: 'Take deployments by git push over SSH (vps and dedicated plans)',
        description: 'Makes the site take `git push`: a site that never deployed a source moves to the app image (its container restarts once, its files kept, public/ served as before), whose ~/app.git deploys each push to main or master and prints the build and its result to the pusher. Answers the remote to add. Idempotent.',
        operationId: 'enableGitPush',
      },
    })
    .delete('/sites/:tenant_slug/ssh/keys/:key_id/', ({ site, params }) => ssh.removeKey(site, params.key_id), {
      scope: 'write',
      site: 'changeable',
      params: SshKeyParams,
      body: NoBody,
      response: ok(SshKeyView),
      detail: { tags, summary: 'Remove a public key', operationId: 'removeSshKey' },
    })
