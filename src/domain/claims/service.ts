import CLAIM_AGENT from '../../../agent/claim-token.sh' with { type: 'text' }
import type { ContainerRuntime } from '../../drivers/runtime/types'
import { iso, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { Store } from '../../store/store'
import { conflict, invalid, op, say } from '../errors'
import { sha256, type KeysService } from '../keys'
import type { ClaimsRepository } from './repository'
import type { ClaimedKeyView, ClaimRequestedView } from './views'
import type { SiteRecords } from '../sites'

/** Claim tokens work once, for an hour (spec part 8). */
export const CLAIM_TOKEN_TTL_MS = 60 * 60 * 1000
/** Exit status of agent/claim-token.sh when it refuses to write (a planted link, say). */
const AGENT_REFUSED = 3

export interface ClaimsServiceDeps {
  store: Store
  clock: Clock
  log: Logger
  repo: ClaimsRepository
  sites: Pick<SiteRecords, 'findLiveBySlug' | 'find'>
  keys: Pick<KeysService, 'issue'>
  runtime: Pick<ContainerRuntime, 'exec'>
  /** The brand prefix (config `brand.prefix`): the token's folder is `~/.{prefix}`. */
  prefix: string
}

/**
 * The claim flow (spec part 4, API keys): whoever can read a site's files proves it by reading a
 * token Berth's in-container agent wrote there, and trades it for a key bound to that one site
 * (read and write). Tokens are stored hashed, work once, for an hour.
 */
export class ClaimsService {
  constructor(private d: ClaimsServiceDeps) {}


  get tokenPath(): string {
    return `~/.${this.d.prefix}/.claim_token`
  }

  /**
   * requestClaim: records a token and has the agent write it into the site. invalid for
   * an unknown site, one with an active claimed key, or one with a token pending; conflict when the
   * agent refuses (a symbolic link planted at the folder) or the site is not running.
   */
  async request(slug: string): Promise<ClaimRequestedView> {
    const token = `${this.d.prefix}_claim_${Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('hex')}`
    const now = this.d.clock.now()
    const id = crypto.randomUUID()
    const site = this.d.store.write(() => {
      const found = this.d.sites.findLiveBySlug(slug)
      if (!found || found.status === 'pending_deletion' || found.status === 'failed') {
        throw invalid('site_slug', `No site '${slug}' can be claimed; check the slug (it is the name in the site's address).`)
      }
      if (this.d.repo.hasActiveSiteKey(found.id)) {
        throw invalid('site_slug', say`Site '${slug}' already has an active claimed key; revoke it (${op('revokeKey')}) to claim again.`)
      }
      if (this.d.repo.findPending(found.id, now)) {
        throw invalid('site_slug', say`A claim token for '${slug}' is already waiting in ${this.tokenPath}; use it (${op('claimKey')}) or wait for it to expire (1 hour).`)
      }
      this.d.repo.insert({ id, siteId: found.id, tokenHash: sha256(token), createdAt: now, expiresAt: now + CLAIM_TOKEN_TTL_MS })
      return found
    })
    try {
      const result = await this.d.runtime.exec(site.slug, ['sh', '-c', CLAIM_AGENT, 'berth-agent', this.d.prefix, token], { timeoutMs: 10_000 })
      if (result.exitCode !== 0) {
        const reason = result.output.trim().split('\n').pop() || `the agent exited with ${result.exitCode}`
        if (result.exitCode === AGENT_REFUSED) throw conflict(`The token was not written: ${reason}.`, 'site_slug')
        throw new Error(`claim agent failed (${result.exitCode}): ${reason}`)
      }
    } catch (err) {
      this.d.store.write(() => this.d.repo.remove(id))
      throw err
    }
    this.d.log.info('claim token written', { site: site.slug })
    return { site_slug: site.slug, token_path: this.tokenPath, expires_at: iso(now + CLAIM_TOKEN_TTL_MS) }
  }

  /**
   * claimKey: trades a token for a site-scoped key (read, write) of the site's account.
   * invalid for a token that is unknown, expired or used; of two concurrent claims exactly one wins.
   */
  claim(token: string): ClaimedKeyView {
    return this.d.store.write(() => {
      const row = this.d.repo.findByHash(sha256(token.trim()))
      const now = this.d.clock.now()
      if (!row) throw invalid('claim_token', say`This claim token is not valid; request a new one with ${op('requestClaim')}.`)
      if (row.usedAt !== null) throw invalid('claim_token', say`This claim token was already used; request a new one with ${op('requestClaim')}.`)
      if (row.expiresAt <= now) throw invalid('claim_token', say`This claim token has expired (they last 1 hour); request a new one with ${op('requestClaim')}.`)
      const site = this.d.sites.find(row.siteId)
      if (!site || site.status === 'deleted' || site.status === 'pending_deletion') {
        throw invalid('claim_token', 'The site of this claim token no longer exists.')
      }
      const key = this.d.keys.issue(site.accountId, `claimed: ${site.slug}`, ['read', 'write'], site.id)
      if (!this.d.repo.markUsed(row.id, now, key.key_id)) throw invalid('claim_token', say`This claim token was already used; request a new one with ${op('requestClaim')}.`)
      return { api_key: key.api_key, key_id: key.key_id, site_slug: site.slug, site_scoped: true as const, scopes: ['read', 'write'] }
    })
  }
}
