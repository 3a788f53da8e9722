import { BACKSTOP_MOVED } from './iptables-rules'
import type { FirewallCheck, SiteFirewall } from './types'
import type { Logger } from '../../lib/logger'

/** What the hoster loses while the rules are not in place, said with every warning. */
const EXPOSED = "sites can reach the host's own addresses (Berth's API included) and link-local ones (the cloud metadata service)"

/**
 * Keeps the site firewall (drivers/firewall) in place: at start and at every reconcile pass, it
 * checks the host's rules and puts back what is missing or changed (something flushed the chain,
 * a firewall service reloaded), saying so in the log. It never stops Berth: a missing tool or
 * privilege is a warning, logged again only when the reason changes.
 */
export class SiteFirewallKeeper {
  private lastFailure: string | null = null
  private passes = 0

  constructor(private deps: { firewall: SiteFirewall | null; log: Logger }) {}

  private tail: Promise<unknown> = Promise.resolve()
  /** The policy of the last pass (JSON); a keeping pass runs again as soon as it changes. */
  private keptPolicy: string | null = null

  /**
   * A pass when the policy changed since the last one (a cluster's node joined, was removed or
   * moved its agent port: the rules follow the nodes); cheap otherwise, so berth serve calls it
   * with every node health round (2 s). Null when nothing changed.
   */
  keepIfChanged(): Promise<FirewallCheck | null> {
    const firewall = this.deps.firewall
    if (!firewall || this.keptPolicy === null || JSON.stringify(firewall.policy) === this.keptPolicy) return Promise.resolve(null)
    return this.keep()
  }

  /**
   * Checks and restores the rules; never throws. Returns the check before any change, or null
   * when off or failed. One pass at a time: two at once would both replace the same rules.
   */
  keep(): Promise<FirewallCheck | null> {
    const pass = this.tail.then(() => this.keepOnce())
    this.tail = pass
    return pass
  }

  private async keepOnce(): Promise<FirewallCheck | null> {
    const { firewall, log } = this.deps
    const first = this.passes++ === 0
    if (!firewall) {
      if (first) log.warn(`the site firewall is off (containers.firewall = false): ${EXPOSED}`)
      return null
    }
    const policy = firewall.policy
    const pool = policy.pool
    this.keptPolicy = JSON.stringify(policy)
    try {
      const before = await firewall.ensure()
      if (this.lastFailure !== null) log.info('the site firewall works again', { tool: firewall.tool, pool })
      this.lastFailure = null
      if (before.state === 'in_place') {
        if (first) log.info('the site firewall is in place', { tool: firewall.tool, pool })
      } else if (before.problems.length > 0 && before.problems.every((p) => p === BACKSTOP_MOVED)) {
        // The engine made a network (its rules go on top of FORWARD): expected, not a tampering.
        log.debug('put the site firewall\'s FORWARD jump back on top', { tool: firewall.tool, pool })
      } else if (before.state === 'missing' && first) {
        log.info('installed the site firewall', { tool: firewall.tool, pool })
      } else {
        log.warn('restored the site firewall', { tool: firewall.tool, pool, found: before.state, problems: before.problems })
      }
      return before
    } catch (err) {
      const error = (err as Error).message
      if (error !== this.lastFailure) {
        log.warn(`the site firewall could not be set: ${EXPOSED}`, {
          tool: firewall.tool,
          pool,
          error,
          fix: 'install iptables and run Berth as root with CAP_NET_ADMIN (berth firewall check), or set containers.firewall = false',
        })
      }
      this.lastFailure = error
      return null
    }
  }
}
