import { isIpv4 } from '../../lib/ip'
import type { Logger } from '../../lib/logger'
import { compareTagged, forwardHookOf, parseListing, removeTaggedScript, replaceTaggedScript, type Listing } from '../../drivers/firewall/iptables-rules'
import { LOCK_WAIT, runTool } from '../../drivers/firewall/iptables'
import type { FirewallCheck } from '../../drivers/firewall/types'
import {
  ACCEPT_CHAIN, desiredForwardRules, DNAT_CHAIN, SNAT_CHAIN, FORWARDS_TAG, forwardHookOfRules, swapScript, type ForwardEnds, type ForwardRules, type KernelForward,
} from './kernel-forward-rules'

/** What is lost while the rules are not in place, said with every warning. */
const FALLBACK = 'the agent relays the sites\' traffic itself (slower)'

/**
 * The agent's site forwards kept as kernel rules (kernel-forward-rules.ts) with `iptables` and
 * `iptables-restore --noflush`, both tables in one script. The agent's listeners stay open behind
 * them: they reserve each port and relay what the rules do not carry (another source than the
 * control plane, which they refuse; an IPv6 forward; a node where iptables fails).
 *
 * Every change goes through one queue: `set` replaces the whole rule set with the forwards it is
 * given, `keep` (every 30 s) puts it back when something flushed or changed it, `remove` takes it
 * away for good. The agent's stop leaves the rules: the sites keep serving while no agent runs. Failures never throw: they are warned once per reason, and
 * the relay carries the traffic meanwhile.
 */
export class KernelForwards {
  private wanted: KernelForward[] = []
  /** The rules the last change put in place (or found there); null until one did, or after a failure. */
  private applied: ForwardRules | null = null
  private queue: Promise<unknown> = Promise.resolve()
  private lastFailure: string | null = null
  private removed = false
  /** Whether `set` was called: until then the rules in place are a former agent's, left alone. */
  private given = false
  private readonly unusable: string | null
  private readonly relayedOnly = new Set<string>()

  constructor(
    private readonly o: ForwardEnds & { log: Logger },
    private readonly commands = { iptables: 'iptables', restore: 'iptables-restore' },
  ) {
    this.unusable = isIpv4(o.node) && isIpv4(o.control) ? null : `the node's address (${o.node}) or the control address (${o.control}) is not IPv4`
  }

  /**
   * Carries `forwards` in the kernel from now on (every rule of ours replaced); true when in
   * place. A forward's PUT waits for it: one `iptables-restore` from the rules last applied
   * (a retarget after a container came back is on the way to the site's next answer), else the
   * host's rules listed and replaced.
   */
  set(forwards: KernelForward[]): Promise<boolean> {
    this.given = true
    this.wanted = forwards.filter((f) => this.ipv4Target(f))
    return this.serialize(async () => (await this.swap()) || (await this.ensure(false)) !== null)
  }

  /**
   * Checks the rules and restores them when changed (the 30 s check); the check before, or null
   * when off or failed. Nothing before the first `set`: the rules a former agent left (a crash,
   * a stop) carry its sites' traffic until the control plane asks for the forwards again.
   */
  keep(): Promise<FirewallCheck | null> {
    if (!this.given) return Promise.resolve(null)
    return this.serialize(() => this.ensure(true))
  }

  /** Takes every rule and chain of ours away; later calls change nothing. */
  remove(): Promise<void> {
    return this.serialize(async () => {
      this.removed = true
      if (this.unusable) return
      try {
        const [nat, filter] = await Promise.all([this.list('nat'), this.list('filter')])
        const script = [removeTaggedScript('nat', nat, FORWARDS_TAG, [DNAT_CHAIN, SNAT_CHAIN]), removeTaggedScript('filter', filter, FORWARDS_TAG, [ACCEPT_CHAIN])].filter((s) => s !== null).join('')
        if (script) await this.restore(script)
      } catch (err) {
        this.o.log.warn('could not remove the kernel forwards', { error: (err as Error).message })
      }
    })
  }

  /** Turns the rules last applied into the wanted ones with one restore; false when it cannot (then ensure). */
  private async swap(): Promise<boolean> {
    if (this.removed || !this.applied) return false
    const desired = desiredForwardRules(this.o, this.wanted, forwardHookOfRules(this.applied))
    const script = swapScript(this.applied, desired)
    try {
      if (script) await this.restore(script)
      this.applied = desired
      return true
    } catch {
      this.applied = null
      return false
    }
  }

  /**
   * Puts the wanted rules in place unless they are; the check from before, null when off or
   * failed. `checking`: a periodic check, where a difference is a drift worth a warning (after a
   * `set`, the rules in place are the previous set's).
   */
  private async ensure(checking: boolean): Promise<FirewallCheck | null> {
    if (this.removed) return null
    if (this.unusable) return this.failed(this.unusable)
    try {
      const [nat, filter] = await Promise.all([this.list('nat'), this.list('filter')])
      const before = this.compare(nat, filter)
      const desired = desiredForwardRules(this.o, this.wanted, forwardHookOf(filter))
      if (before.state !== 'in_place') {
        this.applied = null
        await this.restore(replaceTaggedScript('nat', nat, desired.nat, FORWARDS_TAG) + replaceTaggedScript('filter', filter, desired.filter, FORWARDS_TAG))
        const after = this.compare(...(await Promise.all([this.list('nat'), this.list('filter')])))
        if (after.state !== 'in_place') throw new Error(`iptables took the rules but they are not in place: ${after.problems.join('; ')}`)
        if (checking && this.lastFailure === null) this.o.log.warn('restored the kernel forwards', { problems: before.problems })
      }
      this.applied = desired
      if (this.lastFailure !== null) this.o.log.info('the kernel forwards work again', { forwards: this.wanted.length })
      this.lastFailure = null
      return before
    } catch (err) {
      this.applied = null
      return this.failed((err as Error).message)
    }
  }

  /** How both tables compare with the wanted rules, as one check. */
  private compare(nat: Listing, filter: Listing): FirewallCheck {
    const desired = desiredForwardRules(this.o, this.wanted, forwardHookOf(filter))
    const checks = [compareTagged(nat, desired.nat, FORWARDS_TAG), compareTagged(filter, desired.filter, FORWARDS_TAG)]
    const problems = checks.flatMap((c) => c.problems)
    const state = checks.every((c) => c.state === 'in_place') ? 'in_place' : checks.every((c) => c.state === 'missing') ? 'missing' : 'drifted'
    return { state, problems, tool: 'iptables' }
  }

  /** Warns once per reason that the relay carries the traffic; null. */
  private failed(error: string): null {
    if (error !== this.lastFailure) this.o.log.warn(`the kernel forwards could not be set: ${FALLBACK}`, { error })
    this.lastFailure = error
    return null
  }

  /** False (warned once per site) for a container address the kernel rules do not carry: IPv6. */
  private ipv4Target(f: KernelForward): boolean {
    if (isIpv4(f.target.address)) return true
    if (!this.relayedOnly.has(f.slug)) this.o.log.warn('a site\'s container address is not IPv4: the agent relays its traffic itself (slower)', { slug: f.slug, target: f.target.address })
    this.relayedOnly.add(f.slug)
    return false
  }

  /** Runs `step` after every earlier one; a failed step does not stop the next. */
  private serialize<T>(step: () => Promise<T>): Promise<T> {
    const next = this.queue.then(step, step)
    this.queue = next.catch(() => undefined)
    return next
  }

  private async list(table: 'nat' | 'filter'): Promise<Listing> {
    return parseListing(await runTool([this.commands.iptables, '-w', LOCK_WAIT, '-t', table, '-S']))
  }

  private async restore(script: string): Promise<void> {
    await runTool([this.commands.restore, '-w', LOCK_WAIT, '--noflush'], script)
  }
}
