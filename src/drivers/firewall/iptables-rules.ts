import { createHash } from 'node:crypto'
import type { FirewallCheck, SiteFirewallPolicy } from './types'

/**
 * The site firewall as iptables rules (filter table), and how to compare it with a listing of the
 * host's (`iptables -S`). Pure: iptables.ts runs the commands.
 *
 * Two chains per pool, each entered by one jump matching the pool as source:
 *
 * - `BERTH-IN-<pool>`, from INPUT: traffic from sites to any of the host's own addresses (every
 *   packet in INPUT is one: the bridge gateways, the public address, other interfaces'). Replies to
 *   connections the host opened (the edge and SSH connect into containers), DNS (a resolver on the
 *   host), and the public edge's ports on the public address return to INPUT; the rest is
 *   rejected.
 * - `BERTH-FWD-<pool>`, from DOCKER-USER (FORWARD where Docker made none): traffic routed through
 *   the host to link-local addresses, 169.254.0.0/16, where clouds answer instance metadata and
 *   credentials, to the policy's closed ports at any address (a cluster's Swarm and agent ports),
 *   to the policy's guarded host (a node's control plane) but for TCP to its open ports, and to
 *   its blocked hosts (a cluster's nodes: their forwards take the control plane's address, which
 *   a site on the control plane leaves with), and TCP to the policy's refused ports at any address
 *   (25, outbound SMTP, unless containers.outbound_smtp), these with a TCP reset.
 *   Replies to connections made into the sites pass first. Everything else returns to Docker's
 *   own rules (the outside world passes).
 *
 * Where DOCKER-USER exists, FORWARD jumps into `BERTH-FWD-<pool>` too, first: a backstop for
 * the moments an engine before Docker 28 has no jump into DOCKER-USER (it deletes and inserts it
 * again at each network it makes). A packet may go through the chain twice; what passes returns.
 *
 * Rules return rather than accept, so the host's own rules still apply to what passes. Refusals
 * are `icmp-admin-prohibited` (`tcp-reset` for the refused TCP ports): a site's request fails at
 * once instead of hanging for a minute.
 * Each rule carries the comment `berth:<pool>:<digest of the rule set>`: the pool finds them, the
 * digest tells a rule set from an older policy's.
 */

/** Rejections say why and fail at once (EHOSTUNREACH) instead of timing out. */
const REJECT = ['-j', 'REJECT', '--reject-with', 'icmp-admin-prohibited']
/** Refused TCP ports (outbound SMTP) answer with a reset: the client sees ECONNREFUSED at once. */
const RESET = ['-j', 'REJECT', '--reject-with', 'tcp-reset']
const REPLIES = ['-m', 'conntrack', '--ctstate', 'RELATED,ESTABLISHED']
/** Link-local addresses (RFC 3927): the cloud metadata service lives at 169.254.169.254. */
export const LINK_LOCAL = '169.254.0.0/16'

/** One chain of ours, filled in order. */
export interface OwnChain {
  name: string
  rules: string[][]
}

/** A jump from one of the host's chains (INPUT, DOCKER-USER) into one of ours. */
export interface Jump {
  from: string
  rule: string[]
}

export interface DesiredRules {
  /** `berth:<pool>:<digest>`, on every rule. */
  comment: string
  chains: OwnChain[]
  jumps: Jump[]
}

/** The host's filter table as `iptables -S` prints it: its chains and each chain's rules in order. */
export interface Listing {
  chains: Set<string>
  /** Each rule as printed after `-A <chain> `. */
  rules: Map<string, string[]>
}

/** `10.231.0.0/16` as it appears in chain names: `10.231.0.0-16`. */
const chainSuffix = (pool: string) => pool.replace('/', '-')
export const inputChainOf = (pool: string) => `BERTH-IN-${chainSuffix(pool)}`
export const forwardChainOf = (pool: string) => `BERTH-FWD-${chainSuffix(pool)}`
/** The start of the comments of `pool`'s rules: `berth:<pool>:`. */
export const tagOf = (pool: string) => `berth:${pool}:`

/**
 * The chain Docker sends forwarded traffic through first and leaves to the administrator:
 * DOCKER-USER (Docker never flushes it), else FORWARD itself.
 */
export function forwardHookOf(listing: Listing): string {
  return listing.chains.has('DOCKER-USER') ? 'DOCKER-USER' : 'FORWARD'
}

/** The rules `policy` needs, with `forwardHook` as the chain forwarded traffic is taken from. */
export function desiredRules(policy: SiteFirewallPolicy, forwardHook: string): DesiredRules {
  const input = inputChainOf(policy.pool)
  const forward = forwardChainOf(policy.pool)
  const inputRules: string[][] = [
    [...REPLIES, '-j', 'RETURN'],
    ['-p', 'udp', '--dport', '53', '-j', 'RETURN'],
    ['-p', 'tcp', '--dport', '53', '-j', 'RETURN'],
    ...(policy.publicEdge && policy.publicEdge.ports.length > 0
      ? [['-d', `${policy.publicEdge.address}/32`, '-p', 'tcp', '-m', 'multiport', '--dports', policy.publicEdge.ports.join(','), '-j', 'RETURN']]
      : []),
    REJECT,
  ]
  const forwardRules: string[][] = [
    [...REPLIES, '-j', 'RETURN'],
    ...chunks(policy.refusedTcpPorts ?? [], MULTIPORT_MAX).map((ports) => ['-p', 'tcp', '-m', 'multiport', '--dports', ports.join(','), ...RESET]),
    ...closedPortRules(policy.closedPorts ?? null),
    ...guardedHostRules(policy.guardedHost ?? null),
    ...(policy.blockedHosts ?? []).map((address) => ['-d', `${address}/32`, ...REJECT]),
    ['-d', LINK_LOCAL, ...REJECT],
  ]
  const jumps = [
    { from: 'INPUT', rule: ['-s', policy.pool, '-j', input] },
    { from: forwardHook, rule: ['-s', policy.pool, '-j', forward] },
    // The backstop: engines before Docker 28 delete and re-insert FORWARD's jump into DOCKER-USER
    // whenever they make a network (moby#49538); this jump of ours, at the top of FORWARD, holds
    // the forward rules meanwhile. The engine's new networks' rules land above it: each keeping
    // pass (and Berth right after it makes a site's network) puts it back on top.
    ...(forwardHook === 'DOCKER-USER' ? [{ from: 'FORWARD', rule: ['-s', policy.pool, '-j', forward] }] : []),
  ]
  const digest = createHash('sha256').update(JSON.stringify({ inputRules, forwardRules, jumps })).digest('hex').slice(0, 8)
  const comment = `${tagOf(policy.pool)}${digest}`
  const tagged = (rule: string[]) => withComment(rule, comment)
  return {
    comment,
    chains: [
      { name: input, rules: inputRules.map(tagged) },
      { name: forward, rules: forwardRules.map(tagged) },
    ],
    jumps: jumps.map((j) => ({ from: j.from, rule: tagged(j.rule) })),
  }
}

/**
 * The forward rules that keep sites off `guarded` (a node's control plane): TCP to its open ports
 * returns, the rest to its address is rejected. None without one, so the single box's rule set
 * (and its digest) stays as it was.
 */
function guardedHostRules(guarded: SiteFirewallPolicy['guardedHost']): string[][] {
  if (!guarded) return []
  const destination = ['-d', `${guarded.address}/32`]
  return [
    ...(guarded.openPorts.length > 0 ? [[...destination, '-p', 'tcp', '-m', 'multiport', '--dports', guarded.openPorts.join(','), '-j', 'RETURN']] : []),
    [...destination, ...REJECT],
  ]
}

/**
 * The only drift a network the engine made causes: its rules (and, before Docker 28, its jump into
 * DOCKER-USER) went on top of FORWARD, above the backstop. Expected, not a tampering: the next
 * pass, or Berth right after it made a network, puts the backstop back on top.
 */
export const BACKSTOP_MOVED = 'the jump from FORWARD is not first'

/** The most ports one `-m multiport --dports` takes. */
export const MULTIPORT_MAX = 15

/**
 * The forward rules that refuse the policy's closed ports (a cluster's: the Swarm's and every
 * node's agent ports) at any address, MULTIPORT_MAX ports a rule. None without them, so the single
 * box's rule set stays as it was.
 */
function closedPortRules(closed: SiteFirewallPolicy['closedPorts']): string[][] {
  if (!closed) return []
  return (['tcp', 'udp'] as const).flatMap((protocol) =>
    chunks(closed[protocol], MULTIPORT_MAX).map((ports) => ['-p', protocol, '-m', 'multiport', '--dports', ports.join(','), ...REJECT]),
  )
}

function chunks<T>(list: T[], size: number): T[][] {
  const out: T[][] = []
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size))
  return out
}

/** `rule` with `-m comment --comment {comment}` before its target (`-j`). */
export function withComment(rule: string[], comment: string): string[] {
  const target = rule.indexOf('-j')
  return [...rule.slice(0, target), '-m', 'comment', '--comment', comment, ...rule.slice(target)]
}

/** Parses `iptables -S` (the filter table, or any with `-t`). */
export function parseListing(text: string): Listing {
  const listing: Listing = { chains: new Set(), rules: new Map() }
  for (const line of text.split('\n')) {
    const m = /^-([NPA]) (\S+)(?: (.*))?$/.exec(line.trim())
    if (!m) continue
    const [, kind, chain, rest] = m
    listing.chains.add(chain!)
    if (!listing.rules.has(chain!)) listing.rules.set(chain!, [])
    if (kind === 'A') listing.rules.get(chain!)!.push(rest ?? '')
  }
  return listing
}

/** The `berth:...` comment of a listed rule, or null. iptables-nft quotes it, legacy does not. */
export function commentOf(rule: string): string | null {
  return /--comment "?(berth:[^"\s]+)"?/.exec(rule)?.[1] ?? null
}

/** Compares the host's rules with `desired`: what is in place, missing or out of place. */
export function compareRules(listing: Listing, desired: DesiredRules, pool: string): Omit<FirewallCheck, 'tool'> {
  return compareTagged(listing, desired, tagOf(pool))
}

/**
 * compareRules for any rule set whose comments start with `tag` (`berth:<pool>:` for the site
 * firewall): its chains must hold exactly its rules, and each jump must be there once, after
 * nothing but other `berth:` rules.
 */
export function compareTagged(listing: Listing, desired: DesiredRules, tag: string): Omit<FirewallCheck, 'tool'> {
  const problems: string[] = []
  let found = 0
  for (const chain of desired.chains) {
    if (!listing.chains.has(chain.name)) {
      problems.push(`chain ${chain.name} missing`)
      continue
    }
    found++
    const rules = listing.rules.get(chain.name) ?? []
    if (rules.length !== chain.rules.length || rules.some((r) => commentOf(r) !== desired.comment)) {
      problems.push(`chain ${chain.name} holds other rules than Berth's`)
    }
  }
  const own = new Set(desired.chains.map((c) => c.name))
  for (const [chain, rules] of listing.rules) {
    if (own.has(chain)) continue
    const wanted = desired.jumps.find((j) => j.from === chain)
    const target = wanted?.rule.at(-1)
    let current = 0
    rules.forEach((rule, i) => {
      const comment = commentOf(rule)
      if (!comment?.startsWith(tag)) return
      found++
      if (!wanted || comment !== desired.comment || !rule.endsWith(`-j ${target}`)) {
        problems.push(`stale rule in ${chain}`)
        return
      }
      current++
      // Only other installations' jumps may come first: a rule of the host's that accepted
      // sites' traffic before ours would undo them.
      if (rules.slice(0, i).some((before) => !commentOf(before)?.startsWith('berth:'))) problems.push(`the jump from ${chain} is not first`)
    })
    if (wanted && current > 1) problems.push(`${current} jumps from ${chain}`)
  }
  for (const jump of desired.jumps) {
    if (!listing.chains.has(jump.from)) problems.push(`no chain ${jump.from}`)
    else if (!(listing.rules.get(jump.from) ?? []).some((r) => commentOf(r) === desired.comment)) problems.push(`no jump from ${jump.from}`)
  }
  return { state: problems.length === 0 ? 'in_place' : found === 0 ? 'missing' : 'drifted', problems }
}

/**
 * An `iptables-restore --noflush` script that takes away every rule of `pool` and puts `desired`
 * in place, in one transaction. Declaring our chains creates them or empties them.
 */
export function replaceScript(listing: Listing, desired: DesiredRules, pool: string): string {
  return replaceTaggedScript('filter', listing, desired, tagOf(pool))
}

/** replaceScript for the rules tagged `tag` in `table`. */
export function replaceTaggedScript(table: string, listing: Listing, desired: DesiredRules, tag: string): string {
  return [
    `*${table}`,
    ...desired.chains.map((c) => `:${c.name} - [0:0]`),
    ...deletions(listing, tag, new Set(desired.chains.map((c) => c.name))),
    ...desired.chains.flatMap((c) => c.rules.map((r) => `-A ${c.name} ${r.join(' ')}`)),
    ...desired.jumps.map((j) => `-I ${j.from} 1 ${j.rule.join(' ')}`),
    'COMMIT',
    '',
  ].join('\n')
}

/** An `iptables-restore --noflush` script removing every rule and chain of `pool`; null when there is none. */
export function removeScript(listing: Listing, pool: string): string | null {
  return removeTaggedScript('filter', listing, tagOf(pool), [inputChainOf(pool), forwardChainOf(pool)])
}

/** removeScript for the rules tagged `tag` in `table` and the chains `chains` (those that exist). */
export function removeTaggedScript(table: string, listing: Listing, tag: string, chains: string[]): string | null {
  const own = chains.filter((c) => listing.chains.has(c))
  const lines = [...deletions(listing, tag, new Set(own)), ...own.map((c) => `-F ${c}`), ...own.map((c) => `-X ${c}`)]
  return lines.length === 0 ? null : [`*${table}`, ...lines, 'COMMIT', ''].join('\n')
}

/** `-D` lines for every rule tagged `tag` outside our own chains (the jumps, current or stale). */
function deletions(listing: Listing, tag: string, own: ReadonlySet<string>): string[] {
  return [...listing.rules].flatMap(([chain, rules]) =>
    own.has(chain) ? [] : rules.filter((r) => commentOf(r)?.startsWith(tag)).map((r) => `-D ${chain} ${r}`),
  )
}
