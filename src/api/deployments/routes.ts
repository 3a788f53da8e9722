import { Elysia, t } from 'elysia'
import { NoBody, ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { SiteParams } from '../sites/model'
import { Deployment, DeploymentParams } from './model'
import type { DeploymentsService } from '../../domain/deployments'
import { ARCHIVE_TYPES, type AppIntake } from '../../domain/apps'
import { mediaType } from '../http/body'
import { DeployBody } from './model'

/** The path of deploySite, whose archive body is read by its handler as a stream (api/app.ts's jsonBody). */
export const isArchiveDeploy = (path: string, type: string) => type in ARCHIVE_TYPES && /^\/api\/v1\/sites\/[^/]+\/deploy\/$/.test(path)

const tags = ['Deployments']

export const deploymentRoutes = (plugins: ApiPlugins, deployments: DeploymentsService, intake: AppIntake) =>
  new Elysia({ name: 'deployment-routes' })
    .use(plugins)
    .post('/sites/:tenant_slug/deploy/', async ({ site, body, request }) => {
      const format = ARCHIVE_TYPES[mediaType(request)]
      if (format) return intake.archive(site, request.body, format) as Promise<Deployment>
      if (body.source) return intake.source(site, body.source) as Promise<Deployment>
      return deployments.trigger(site)
    }, {
      scope: 'write',
      site: 'changeable',
      params: SiteParams,
      body: DeployBody,
      response: ok(Deployment),
      errors: [507],
      detail: {
        tags,
        summary: "Deploy the site, in the background: without a body, reload its web server (an app's processes) and run ~/deploy.sh; with a source (a tar.gz or zip body, or JSON {\"source\": {\"git\": URL, \"ref\": REF}}), build that tree into a new release and switch to it once it answers",
        operationId: 'deploySite',
        requestBody: {
          content: {
            'application/json': { schema: { $ref: '#/components/schemas/DeployBody' } },
            'application/gzip': { schema: { type: 'string', format: 'binary', description: 'A tar.gz of the tree (at its root, or in one top folder). Bounded by the site\'s free disk; members with .., absolute paths, links leaving the tree or devices are refused (422 UNSAFE_ARCHIVE).' } },
            'application/zip': { schema: { type: 'string', format: 'binary', description: 'A zip of the tree, checked as a tar.gz is.' } },
          },
        },
      } as never,
    })
    .post('/sites/:tenant_slug/deployments/:deployment_id/rollback/', ({ site, params }) => deployments.rollback(site, params.deployment_id), {
      scope: 'write',
      site: 'changeable',
      params: DeploymentParams,
      body: NoBody,
      response: ok(Deployment),
      detail: { tags, summary: 'Put back the files an earlier deployment recorded, as a new deployment (reload and ~/deploy.sh follow), in the background', operationId: 'rollbackDeployment' },
    })
    .get('/sites/:tenant_slug/deployments/', ({ site }) => deployments.list(site), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      response: ok(t.Array(Deployment)),
      detail: { tags, summary: "The site's deployments, newest first", operationId: 'listDeployments' },
    })
    .get('/sites/:tenant_slug/deployments/:deployment_id/', ({ site, params }) => deployments.get(site, params.deployment_id), {
      scope: 'read',
      site: 'owned',
      params: DeploymentParams,
      response: ok(Deployment),
      detail: { tags, summary: 'One deployment, with its output', operationId: 'getDeployment' },
    })
