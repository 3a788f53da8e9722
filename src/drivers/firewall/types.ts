/**
 * What the site firewall must let through and stop. Sites' traffic is told apart by its source
 * address: every site network is a /28 of `pool`.
 */
export interface SiteFirewallPolicy {
  /** `containers.subnet_pool`, normalized to its network address (10.231.0.0/16). */
  pool: string
  /**
   * The box's public IPv4 address and the ports Berth's edge listens on (server.listen, tls.listen).
   * A site may reach them as any visitor does: its own public URL (WordPress's loopback requests)
   * and other sites on the box. Null when the public address is a loopback one (nothing to allow).
   */
  publicEdge: { address: string; ports: number[] } | null
  /**
   * Another box the sites' traffic is routed to but must not reach: on a cluster's node, the
   * control plane's private address (cluster.address: the Swarm manager's ports, whatever the
   * hoster binds there), which a site's connection would reach masqueraded as the node. Only TCP to
   * `openPorts` passes: the edge's ports (server.listen, tls.listen), so a site still reaches its
   * own public URL when cluster.address is also the public address. Absent or null on the single
   * box, whose own addresses the INPUT rules already cover.
   */
  guardedHost?: { address: string; openPorts: number[] } | null
  /**
   * Ports the sites' routed traffic may not reach at any address: in a cluster, the Swarm's (2377
   * and 7946 over TCP, 7946 and 4789 over UDP) and the agents' (cluster.agent_port and the port
   * after it), which every box of the cluster listens on and which would otherwise see a site's
   * connection as coming from its box. Ascending, once each. Absent or null on the single box.
   */
  closedPorts?: { tcp: number[]; udp: number[] } | null
  /**
   * Addresses the sites' routed traffic may not reach at all: in a cluster, every node's private
   * address (its agent, engine pass-through and site forwards, and whatever else listens there).
   * A node's forwards accept the control plane's address only, and a site on the control plane
   * leaves masqueraded as that very address: only this rule tells the edge's connections from a
   * site's. Ascending, once each. Absent or null on the single box.
   */
  blockedHosts?: string[] | null
  /**
   * TCP ports sites may not connect to at any address beyond the host, refused with a TCP reset
   * (the site's client sees "connection refused" at once): [25] unless containers.outbound_smtp,
   * so that a compromised site cannot send mail straight to other mail servers and get the box's
   * address onto blocklists (465 and 587, authenticated submission, stay open). Ascending, once
   * each. Absent, null or empty: none.
   */
  refusedTcpPorts?: number[] | null
}

/** How the host's rules compare with the policy. */
export interface FirewallCheck {
  /** `in_place`: exactly the policy's rules; `missing`: none of them; `drifted`: some, or others. */
  state: 'in_place' | 'missing' | 'drifted'
  /** What differs, one phrase each (`no jump from INPUT`); empty when in place. */
  problems: string[]
  /** The command that enforces the rules, e.g. `iptables`. */
  tool: string
}

/**
 * Host firewall rules that keep sites' containers off the host's own addresses and off link-local
 * addresses (the cloud metadata service at 169.254.169.254), while replies to connections the host
 * opened (the edge, SSH), DNS and the rest of the world pass.
 *
 * Contracts, for every implementation:
 * - The rules match `policy.pool` only and are tagged with it: two installations with different
 *   pools on one host never touch each other's rules, and the rules are found without guessing.
 * - `check` changes nothing.
 * - `ensure` is idempotent: rules in place are left alone; anything else (missing, partial, out of
 *   order, duplicated, from an older policy) is replaced by exactly one copy of the policy's rules,
 *   in one transaction where the tool allows it. It returns the check from before.
 * - `remove` takes away every rule and chain of the pool; removing absent rules is a no-op.
 * - A missing tool, a lack of privilege or a refused rule is thrown as FirewallError.
 */
export interface SiteFirewall {
  readonly tool: string
  readonly policy: SiteFirewallPolicy
  check(): Promise<FirewallCheck>
  ensure(): Promise<FirewallCheck>
  /** True when there was something to remove. */
  remove(): Promise<boolean>
}

/** The firewall tool is missing, not permitted, or refused the rules; the message says which. */
export class FirewallError extends Error {}
