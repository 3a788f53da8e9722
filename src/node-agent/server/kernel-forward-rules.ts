import { createHash } from 'node:crypto'
import { withComment, type DesiredRules } from '../../drivers/firewall/iptables-rules'

/**
 * The agent's site forwards as kernel rules (iptables), so that the edge's connections to a
 * site on a node are rewritten by the kernel rather than piped through the agent. Pure:
 * kernel-forwards.ts runs the commands.
 *
 * Two chains, each entered by one jump at the top of a chain of the host's:
 *
 * - `BERTH-NODE-DNAT` (nat table), from PREROUTING: per forward, a connection from the control
 *   address to the node's address on the forward's port is sent to the site's container
 *   (`DNAT --to-destination CIP:CPORT`). Any other source finds no rule and reaches the agent's
 *   listener on that port, which refuses it (or relays, when the rules could not be set).
 * - `BERTH-NODE-SNAT` (nat table), from POSTROUTING: per forward, the connections those rules
 *   rewrote leave for the container masqueraded as the node's address on the site's network (its
 *   gateway), as the agent's relay's and the single box's edge's do. So a site container sees the
 *   edge's connections from one address, its gateway, wherever it runs, and trusts forwarded
 *   headers from that address only (image-php.ts).
 * - `BERTH-NODE-ACCEPT` (filter table), from DOCKER-USER (FORWARD where Docker made none): per
 *   forward, accepts the new connections those rules rewrote (`--ctorigdst` the node's address,
 *   `--ctorigdstport` the forward's port) towards the container; Docker's FORWARD would drop them
 *   (only published ports pass it). Replies pass Docker's own rules.
 *
 * Every rule carries the comment `berth:node-forwards:<digest of the rule set>`. The names and
 * the tag differ from the site firewall's (`BERTH-IN-/BERTH-FWD-<pool>`, `berth:<pool>:`), and
 * each tolerates the other's `berth:` jumps before its own.
 */

export const DNAT_CHAIN = 'BERTH-NODE-DNAT'
export const SNAT_CHAIN = 'BERTH-NODE-SNAT'
export const ACCEPT_CHAIN = 'BERTH-NODE-ACCEPT'
/** The start of every comment of ours. */
export const FORWARDS_TAG = 'berth:node-forwards:'

/** One forward as the kernel carries it: the agent's port on the node, and the container behind it. */
export interface KernelForward {
  slug: string
  port: number
  target: { address: string; port: number }
}

/** Who the rules are for: the node's private address and the only source they rewrite. */
export interface ForwardEnds {
  node: string
  control: string
}

/** The rules of both tables, tagged with one comment. */
export interface ForwardRules {
  comment: string
  nat: DesiredRules
  filter: DesiredRules
}

/** The rules that carry `forwards`, with `forwardHook` the filter chain forwarded traffic is taken from. */
export function desiredForwardRules(ends: ForwardEnds, forwards: KernelForward[], forwardHook: string): ForwardRules {
  const node = `${ends.node}/32`
  const control = `${ends.control}/32`
  const sorted = [...forwards].sort((a, b) => a.port - b.port)
  const dnat = sorted.map((f) => ['-s', control, '-d', node, '-p', 'tcp', '--dport', String(f.port), '-j', 'DNAT', '--to-destination', `${f.target.address}:${f.target.port}`])
  const snat = sorted.map((f) => [
    '-s', control, '-d', `${f.target.address}/32`, '-p', 'tcp', '--dport', String(f.target.port),
    '-m', 'conntrack', '--ctstate', 'DNAT', '--ctorigdst', node, '--ctorigdstport', String(f.port), '-j', 'MASQUERADE',
  ])
  const accept = sorted.map((f) => [
    '-s', control, '-d', `${f.target.address}/32`, '-p', 'tcp', '--dport', String(f.target.port),
    '-m', 'conntrack', '--ctstate', 'NEW', '--ctorigdst', node, '--ctorigdstport', String(f.port), '-j', 'ACCEPT',
  ])
  const natJump = { from: 'PREROUTING', rule: ['-s', control, '-d', node, '-p', 'tcp', '-j', DNAT_CHAIN] }
  const snatJump = { from: 'POSTROUTING', rule: ['-s', control, '-p', 'tcp', '-j', SNAT_CHAIN] }
  const filterJump = { from: forwardHook, rule: ['-s', control, '-p', 'tcp', '-j', ACCEPT_CHAIN] }
  const digest = createHash('sha256').update(JSON.stringify({ dnat, snat, accept, natJump, snatJump, filterJump })).digest('hex').slice(0, 8)
  const comment = `${FORWARDS_TAG}${digest}`
  const tagged = (rule: string[]) => withComment(rule, comment)
  return {
    comment,
    nat: {
      comment,
      chains: [{ name: DNAT_CHAIN, rules: dnat.map(tagged) }, { name: SNAT_CHAIN, rules: snat.map(tagged) }],
      jumps: [natJump, snatJump].map((j) => ({ from: j.from, rule: tagged(j.rule) })),
    },
    filter: { comment, chains: [{ name: ACCEPT_CHAIN, rules: accept.map(tagged) }], jumps: [{ from: filterJump.from, rule: tagged(filterJump.rule) }] },
  }
}

/**
 * An `iptables-restore --noflush` script that turns the rules `from` (known to be in place: the
 * last set applied) into `to` in one transaction per table, without listing the host's rules
 * first: our chains are declared (which empties them) and refilled, the old jumps deleted and the
 * new ones inserted. Null when nothing changes. If the host changed our rules meanwhile, a `-D`
 * finds nothing and the whole script is refused, changing nothing: list and replace then.
 */
export function swapScript(from: ForwardRules, to: ForwardRules): string | null {
  if (from.comment === to.comment) return null
  const table = (name: string, a: DesiredRules, b: DesiredRules) => [
    `*${name}`,
    ...b.chains.map((c) => `:${c.name} - [0:0]`),
    ...a.jumps.map((j) => `-D ${j.from} ${j.rule.join(' ')}`),
    ...b.chains.flatMap((c) => c.rules.map((r) => `-A ${c.name} ${r.join(' ')}`)),
    ...b.jumps.map((j) => `-I ${j.from} 1 ${j.rule.join(' ')}`),
    'COMMIT',
  ]
  return [...table('nat', from.nat, to.nat), ...table('filter', from.filter, to.filter), ''].join('\n')
}

/** The filter chain `rules` take forwarded traffic from (DOCKER-USER, or FORWARD). */
export const forwardHookOfRules = (rules: ForwardRules) => rules.filter.jumps[0]!.from
