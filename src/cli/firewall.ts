import { existsSync } from 'node:fs'
import { databasePath } from '../compose'
import type { Config } from '../config/config'
import { makeNodesRepository } from '../domain/cluster'
import { IptablesFirewall } from '../drivers/firewall/iptables'
import { firewallPolicyOf, SMTP_PORT, type FirewalledNode } from '../drivers/firewall/select'
import { FirewallError, type SiteFirewall, type SiteFirewallPolicy } from '../drivers/firewall/types'
import { pendingMigrations } from '../store/migrate'
import { openStore } from '../store/store'
import { COMMON_OPTIONS, type Command, type CommandContext } from './command'
import { configFrom } from './config-flags'

const OPTIONS = {
  config: { type: 'string' as const, value: 'FILE', help: 'Config file (default: $BERTH_CONFIG, else /etc/berth/berth.toml if present).' },
  ...COMMON_OPTIONS,
}

const DESCRIPTION = [
  'The site firewall keeps sites\' containers (source addresses in containers.subnet_pool) off the',
  "host's own addresses (Berth's API on each bridge gateway, anything else listening on the host)",
  'and off link-local addresses (169.254.0.0/16: the cloud metadata service). Replies to',
  'connections the host opened, DNS, the public edge ports on dns.public_ipv4 and the rest of the',
  'world pass. The rules are two iptables chains, BERTH-IN-<pool> (from INPUT) and BERTH-FWD-<pool>',
  '(from DOCKER-USER), each rule commented berth:<pool>:<digest>. berth serve checks them at start',
  'and every reconcile pass and puts back what is missing; containers.firewall = false turns that off.',
  "On a cluster's control plane the rules also block every node's private address and close each",
  "node's agent ports: check and apply read the nodes from berth.db, as berth serve does.",
  'Outbound SMTP (TCP 25, at any address) is refused with a TCP reset unless containers.outbound_smtp',
  '= true; 465 and 587 (authenticated submission) stay open. check says which holds.',
].join('\n')

/** What the policy does with outbound SMTP, as check reports it. */
function smtpOf(policy: SiteFirewallPolicy): 'refused' | 'open' {
  return policy.refusedTcpPorts?.includes(SMTP_PORT) ? 'refused' : 'open'
}

/**
 * The policy berth serve keeps on this box (drivers/firewall/select.ts): on a cluster's control
 * plane it follows the nodes not removed, read from the store (none before berth serve made it).
 * A message instead when the store cannot be read for them (not migrated to this berth).
 */
export function firewallPolicyOnThisBox(config: Config): SiteFirewallPolicy | string {
  const nodes = config.cluster.enabled ? clusterNodesOf(config) : []
  return typeof nodes === 'string' ? nodes : firewallPolicyOf(config, nodes)
}

function clusterNodesOf(config: Config): FirewalledNode[] | string {
  const path = databasePath(config)
  if (!existsSync(path)) return []
  const store = openStore(path)
  try {
    const pending = pendingMigrations(store)
    if (pending.length > 0) return `${path} is not migrated to this berth (${pending.join(', ')} pending): run berth migrate, or start berth serve`
    return makeNodesRepository(store).list({ live: true })
  } finally {
    store.close()
  }
}

/** The firewall of the configured pool, whether or not containers.firewall is on (these commands act on request). */
function firewallOf(ctx: CommandContext): SiteFirewall {
  const policy = firewallPolicyOnThisBox(configFrom(ctx))
  if (typeof policy === 'string') throw new FirewallError(policy)
  return new IptablesFirewall(policy)
}

/** Runs `fn`, printing a FirewallError as a one-line failure (exit 1). */
async function reporting(ctx: CommandContext, fn: () => Promise<number>): Promise<number> {
  try {
    return await fn()
  } catch (err) {
    if (!(err instanceof FirewallError)) throw err
    ctx.out.error(err.message)
    return 1
  }
}

export const firewallCheckCommand: Command = {
  path: ['firewall', 'check'],
  summary: "Say whether the site firewall's rules are in place; exit 1 when not.",
  usage: 'berth firewall check [--config FILE] [--json]',
  description: DESCRIPTION,
  options: OPTIONS,
  examples: ['sudo berth firewall check', 'sudo iptables -S | grep berth:'],
  run: (ctx) =>
    reporting(ctx, async () => {
      const firewall = firewallOf(ctx)
      const check = await firewall.check()
      const enabled = configFrom(ctx).containers.firewall
      const smtp = smtpOf(firewall.policy)
      ctx.out.result({ ...check, pool: firewall.policy.pool, enabled, outbound_smtp: smtp }, () => [
        `${check.state.replace('_', ' ')} (${check.tool}, pool ${firewall.policy.pool}, outbound SMTP (TCP 25) ${smtp}${enabled ? '' : '; containers.firewall = false: berth serve leaves it alone'})`,
        ...check.problems.map((p) => `  ${p}`),
      ].join('\n'))
      return check.state === 'in_place' ? 0 : 1
    }),
}

export const firewallApplyCommand: Command = {
  path: ['firewall', 'apply'],
  summary: "Put the site firewall's rules in place now (what berth serve does at start).",
  usage: 'berth firewall apply [--config FILE] [--json]',
  description: DESCRIPTION,
  options: OPTIONS,
  examples: ['sudo berth firewall apply'],
  run: (ctx) =>
    reporting(ctx, async () => {
      const firewall = firewallOf(ctx)
      const before = await firewall.ensure()
      const action = before.state === 'in_place' ? 'already in place' : before.state === 'missing' ? 'installed' : 'replaced'
      ctx.out.result({ action, found: before.state, problems: before.problems, tool: firewall.tool, pool: firewall.policy.pool }, () => `site firewall ${action} (${firewall.tool}, pool ${firewall.policy.pool})`)
      return 0
    }),
}

export const firewallRemoveCommand: Command = {
  path: ['firewall', 'remove'],
  summary: "Remove the site firewall's rules and chains (uninstalling; before changing containers.subnet_pool).",
  usage: 'berth firewall remove [--config FILE] [--json]',
  description: `${DESCRIPTION}\nA running berth serve puts them back at its next pass: stop it first, or set containers.firewall = false.`,
  options: OPTIONS,
  examples: ['sudo systemctl stop berth && sudo berth firewall remove'],
  run: (ctx) =>
    reporting(ctx, async () => {
      const firewall = firewallOf(ctx)
      const removed = await firewall.remove()
      ctx.out.result({ removed, tool: firewall.tool, pool: firewall.policy.pool }, () => (removed ? `removed the site firewall of ${firewall.policy.pool}` : `no site firewall rules of ${firewall.policy.pool} to remove`))
      return 0
    }),
}
