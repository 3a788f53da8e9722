import SSH_KEYS_AGENT from '../../../agent/ssh-keys.sh' with { type: 'text' }
import type { ContainerRuntime } from '../../drivers/runtime/types'
import type { SiteRow } from '../../store/schema'
import { conflict, forbidden, invalid, notFound, op, say } from '../errors'
import type { PlansService } from '../plans'
import type { SshGitPushView, SshInfoView, SshKeyAddedView, SshKeyItem } from './views'
import { fingerprintOf, parsePublicKey, PublicKeyError, type PublicKey } from './public-key'

/** The login name in every site image (uid 1000). */
export const SSH_USER = 'site'
const HOST_KEYS = '~/.ssh/host/*.pub'
const AGENT_REFUSED = 3

/**
 * SSH into vps and dedicated sites (design.md "Files, logs, SSH, claim"): where to connect, the
 * host keys to trust, and the public keys allowed in. sshd runs in the site's container as the
 * site user (berth/php); keys go to ~/.ssh/authorized_keys through the in-container agent.
 */
export class SshService {
  constructor(private d: {
    ssh: { host: string }
    plans: Pick<PlansService, 'get'>
    runtime: Pick<ContainerRuntime, 'exec'>
    /**
     * In a cluster: where the node the site runs on is reached, its SSH port being published
     * there: its public address, or, when the hoster gave none, its private one with a warning
     * saying so (null for a site on the control plane's own box, which answers on `ssh.host`).
     */
    nodeHost?: (slug: string) => Promise<{ host: string; warning: string | null } | null>
    /** Makes the site take git push (the apps area's AppPushes.prepare): moved to the app image when it was not. */
    gitPush?: (site: SiteRow) => Promise<{ moved: boolean }>
  }) {}

  async info(owned: SiteRow): Promise<SshInfoView> {
    const site = this.requireSsh(owned)
    const onNode = await this.d.nodeHost?.(site.slug)
    const host = onNode?.host ?? this.d.ssh.host
    const port = site.sshPort!
    const hostKeys = await this.hostKeys(site)
    const hostName = port === 22 ? host : `[${host}]:${port}`
    return {
      host,
      port,
      username: SSH_USER,
      command: `ssh -p ${port} ${SSH_USER}@${host}`,
      host_keys: hostKeys,
      known_hosts: hostKeys.map((k) => `${hostName} ${k.public_key}`),
      warning: onNode?.warning ?? null,
    }
  }

  /**
   * `git push` over SSH (issue 39, docs/api.md "Apps: git push"): the site is made ready (a site
   * still on its plan's image moves to the app image, which holds git, ~/app.git and its hook) and
   * the remote to add is returned. Idempotent: on an app site it only answers.
   */
  async enableGitPush(owned: SiteRow): Promise<SshGitPushView> {
    const site = this.requireSsh(owned)
    if (!this.d.gitPush) throw new Error('git push is not wired on this Berth')
    const onNode = await this.d.nodeHost?.(site.slug)
    const host = onNode?.host ?? this.d.ssh.host
    const { moved } = await this.d.gitPush(site)
    const remote = `ssh://${SSH_USER}@${host.includes(':') ? `[${host}]` : host}:${site.sshPort}/~/app.git`
    return { remote, command: `git remote add berth ${remote}`, branches: ['main', 'master'], moved }
  }

  async listKeys(site: SiteRow): Promise<SshKeyItem[]> {
    return (await this.installed(this.requireSsh(site))).map(view)
  }

  /** Installs one public key line; installing a key already there changes nothing. */
  async addKey(owned: SiteRow, line: string): Promise<SshKeyAddedView> {
    const site = this.requireSsh(owned)
    let key: PublicKey
    try {
      key = parsePublicKey(line)
    } catch (err) {
      if (err instanceof PublicKeyError) throw invalid('public_key', err.message)
      throw err
    }
    const out = await this.agent(site, ['add', key.blob, key.line])
    return { ...view(key), added: out.trim() === 'added' }
  }

  async removeKey(owned: SiteRow, keyId: string): Promise<SshKeyItem> {
    const site = this.requireSsh(owned)
    const slug = site.slug
    const key = (await this.installed(site)).find((k) => k.id === keyId)
    if (!key) throw notFound(say`No key ${keyId} on site '${slug}'; ${op('listSshKeys', { tenant_slug: slug })} lists them.`, 'key_id')
    await this.agent(site, ['remove', key.blob])
    return view(key)
  }

  /** The keys in ~/.ssh/authorized_keys; lines that are not one valid key (the tenant's own) are skipped. */
  private async installed(site: SiteRow): Promise<PublicKey[]> {
    return (await this.agent(site, ['list'])).split('\n').flatMap((line) => {
      if (!line.trim() || line.startsWith('#')) return []
      try {
        return [parsePublicKey(line)]
      } catch {
        return []
      }
    })
  }

  private requireSsh(site: SiteRow): SiteRow {
    const plan = this.d.plans.get(site.planSlug)
    if (!plan.features.ssh) {
      throw forbidden(say`The ${plan.slug} plan has no SSH; scale to a vps or dedicated plan (${op('scaleSite', { tenant_slug: site.slug })}).`)
    }
    if (site.sshPort === null) throw conflict(`SSH for '${site.slug}' is being set up; retry in a minute.`)
    return site
  }

  private async hostKeys(site: SiteRow) {
    const result = await this.d.runtime.exec(site.slug, ['sh', '-c', `cat ${HOST_KEYS} 2>/dev/null || true`], { timeoutMs: 10_000 }).catch(() => null)
    if (!result) return []
    return result.output.split('\n').map((l) => l.trim().split(/\s+/)).filter((f) => f.length >= 2 && /^[A-Za-z0-9+/]+={0,2}$/.test(f[1]!)).map(([type, blob]) => ({
      type: type!,
      public_key: `${type} ${blob}`,
      fingerprint: fingerprintOf(blob!),
    }))
  }

  private async agent(site: SiteRow, args: string[]): Promise<string> {
    const result = await this.d.runtime.exec(site.slug, ['sh', '-c', SSH_KEYS_AGENT, 'berth-agent', ...args], { timeoutMs: 10_000 })
    if (result.exitCode === AGENT_REFUSED) throw conflict(`${result.output.trim().split('\n').pop()}.`)
    if (result.exitCode !== 0) throw new Error(`ssh key agent failed (${result.exitCode}): ${result.output.trim().slice(0, 300)}`)
    return result.output
  }
}

const view = (k: PublicKey) => ({ key_id: k.id, type: k.type, fingerprint: k.fingerprint, comment: k.comment })
