import { BACKSTOP_MOVED, compareRules, desiredRules, forwardHookOf, parseListing, removeScript, replaceScript, type Listing } from './iptables-rules'
import { FirewallError, type FirewallCheck, type SiteFirewall, type SiteFirewallPolicy } from './types'

/** Seconds an iptables command waits for the xtables lock (iptables-legacy; nft ignores it). */
export const LOCK_WAIT = '10'

/**
 * The site firewall kept with `iptables` and `iptables-restore` (either backend: nf_tables, as
 * Debian 11+ and Ubuntu 20.10+ ship, or legacy). Docker itself needs iptables, so a host that runs
 * Docker has it. See iptables-rules.ts for the rules.
 */
export class IptablesFirewall implements SiteFirewall {
  readonly tool = 'iptables'

  private readonly policyNow: () => SiteFirewallPolicy

  /** `policy`: fixed, or read at each call (a cluster's control plane: its rules follow the nodes). */
  constructor(policy: SiteFirewallPolicy | (() => SiteFirewallPolicy), private commands = { iptables: 'iptables', restore: 'iptables-restore' }) {
    this.policyNow = typeof policy === 'function' ? policy : () => policy
  }

  get policy(): SiteFirewallPolicy {
    return this.policyNow()
  }

  async check(): Promise<FirewallCheck> {
    const listing = await this.list()
    return this.compare(listing)
  }

  async ensure(): Promise<FirewallCheck> {
    const policy = this.policy
    const listing = await this.list()
    const before = this.compare(listing, policy)
    if (before.state === 'in_place') return before
    await this.restore(replaceScript(listing, desiredRules(policy, forwardHookOf(listing)), policy.pool))
    const after = this.compare(await this.list(), policy)
    // Anyone's new network on the engine between the restore and the listing moves the backstop
    // down (BACKSTOP_MOVED): the rules took, the next pass puts it back on top.
    if (after.state !== 'in_place' && !after.problems.every((p) => p === BACKSTOP_MOVED)) throw new FirewallError(`${this.tool} took the rules but they are not in place: ${after.problems.join('; ')}`)
    return before
  }

  async remove(): Promise<boolean> {
    const script = removeScript(await this.list(), this.policy.pool)
    if (script === null) return false
    await this.restore(script)
    return true
  }

  private compare(listing: Listing, policy = this.policy): FirewallCheck {
    return { ...compareRules(listing, desiredRules(policy, forwardHookOf(listing)), policy.pool), tool: this.tool }
  }

  /** The filter table, every chain. */
  private async list(): Promise<Listing> {
    return parseListing(await runTool([this.commands.iptables, '-w', LOCK_WAIT, '-S']))
  }

  /** Applies a restore script in one transaction, keeping every rule it does not name. */
  private async restore(script: string): Promise<void> {
    await runTool([this.commands.restore, '-w', LOCK_WAIT, '--noflush'], script)
  }
}

/** Runs a command (iptables, iptables-restore); its standard output, or a FirewallError saying what went wrong. */
export async function runTool(argv: string[], input?: string): Promise<string> {
  let proc: ReturnType<typeof Bun.spawn>
  try {
    proc = Bun.spawn(argv, { stdin: input === undefined ? 'ignore' : new TextEncoder().encode(input), stdout: 'pipe', stderr: 'pipe' })
  } catch {
    throw new FirewallError(`${argv[0]} is not installed (or not on PATH); install the iptables package, or set containers.firewall = false`)
  }
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout as ReadableStream).text(), new Response(proc.stderr as ReadableStream).text(), proc.exited])
  if (code === 0) return stdout
  const why = stderr.trim().split('\n').filter(Boolean).slice(0, 3).join(' ') || `exit status ${code}`
  const hint = /permission denied|not permitted|you must be root/i.test(why) ? ' (Berth needs root with CAP_NET_ADMIN to keep the site firewall)' : ''
  throw new FirewallError(`${argv.slice(0, 2).join(' ')} failed: ${why}${hint}`)
}
