import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../config/config'
import { commentOf, compareRules, desiredRules, forwardHookOf, parseListing, removeScript, replaceScript } from './iptables-rules'
import { firewallPolicyOf, nodeFirewallPolicyOf } from './select'
import type { SiteFirewallPolicy } from './types'

const POLICY: SiteFirewallPolicy = { pool: '10.231.0.0/16', publicEdge: { address: '203.0.113.10', ports: [443, 8080] } }
const desired = desiredRules(POLICY, 'DOCKER-USER')
const C = desired.comment

/** A host as Docker leaves it: `iptables -S` of iptables-nft 1.8.9. */
const DOCKER_HOST = [
  '-P INPUT ACCEPT',
  '-P FORWARD DROP',
  '-P OUTPUT ACCEPT',
  '-N DOCKER',
  '-N DOCKER-USER',
  '-A FORWARD -j DOCKER-USER',
  '-A FORWARD -o docker0 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
  '-A DOCKER-USER -j RETURN',
]

/** The same host with the policy in place, as iptables-nft prints it (comments quoted, matches spelt out). */
const withRules = (input: string[] = [`-A INPUT -s 10.231.0.0/16 -m comment --comment "${C}" -j BERTH-IN-10.231.0.0-16`]) => [
  ...DOCKER_HOST.slice(0, 3),
  '-N BERTH-FWD-10.231.0.0-16',
  '-N BERTH-IN-10.231.0.0-16',
  ...DOCKER_HOST.slice(3, 5),
  ...input,
  `-A FORWARD -s 10.231.0.0/16 -m comment --comment "${C}" -j BERTH-FWD-10.231.0.0-16`,
  ...DOCKER_HOST.slice(5, 7),
  `-A BERTH-FWD-10.231.0.0-16 -m conntrack --ctstate RELATED,ESTABLISHED -m comment --comment "${C}" -j RETURN`,
  `-A BERTH-FWD-10.231.0.0-16 -d 169.254.0.0/16 -m comment --comment "${C}" -j REJECT --reject-with icmp-admin-prohibited`,
  `-A BERTH-IN-10.231.0.0-16 -m conntrack --ctstate RELATED,ESTABLISHED -m comment --comment "${C}" -j RETURN`,
  `-A BERTH-IN-10.231.0.0-16 -p udp -m udp --dport 53 -m comment --comment "${C}" -j RETURN`,
  `-A BERTH-IN-10.231.0.0-16 -p tcp -m tcp --dport 53 -m comment --comment "${C}" -j RETURN`,
  `-A BERTH-IN-10.231.0.0-16 -d 203.0.113.10/32 -p tcp -m multiport --dports 443,8080 -m comment --comment "${C}" -j RETURN`,
  `-A BERTH-IN-10.231.0.0-16 -m comment --comment "${C}" -j REJECT --reject-with icmp-admin-prohibited`,
  `-A DOCKER-USER -s 10.231.0.0/16 -m comment --comment "${C}" -j BERTH-FWD-10.231.0.0-16`,
  '-A DOCKER-USER -j RETURN',
].join('\n')

const compare = (text: string) => compareRules(parseListing(text), desired, POLICY.pool)

describe('the site firewall as iptables rules', () => {
  it('is two chains entered from INPUT and DOCKER-USER (and FORWARD, first: the backstop), applied in one restore transaction', () => {
    expect(C).toMatch(/^berth:10\.231\.0\.0\/16:[0-9a-f]{8}$/)
    expect(replaceScript(parseListing(DOCKER_HOST.join('\n')), desired, POLICY.pool)).toBe([
      '*filter',
      ':BERTH-IN-10.231.0.0-16 - [0:0]',
      ':BERTH-FWD-10.231.0.0-16 - [0:0]',
      `-A BERTH-IN-10.231.0.0-16 -m conntrack --ctstate RELATED,ESTABLISHED -m comment --comment ${C} -j RETURN`,
      `-A BERTH-IN-10.231.0.0-16 -p udp --dport 53 -m comment --comment ${C} -j RETURN`,
      `-A BERTH-IN-10.231.0.0-16 -p tcp --dport 53 -m comment --comment ${C} -j RETURN`,
      `-A BERTH-IN-10.231.0.0-16 -d 203.0.113.10/32 -p tcp -m multiport --dports 443,8080 -m comment --comment ${C} -j RETURN`,
      `-A BERTH-IN-10.231.0.0-16 -m comment --comment ${C} -j REJECT --reject-with icmp-admin-prohibited`,
      `-A BERTH-FWD-10.231.0.0-16 -m conntrack --ctstate RELATED,ESTABLISHED -m comment --comment ${C} -j RETURN`,
      `-A BERTH-FWD-10.231.0.0-16 -d 169.254.0.0/16 -m comment --comment ${C} -j REJECT --reject-with icmp-admin-prohibited`,
      `-I INPUT 1 -s 10.231.0.0/16 -m comment --comment ${C} -j BERTH-IN-10.231.0.0-16`,
      `-I DOCKER-USER 1 -s 10.231.0.0/16 -m comment --comment ${C} -j BERTH-FWD-10.231.0.0-16`,
      `-I FORWARD 1 -s 10.231.0.0/16 -m comment --comment ${C} -j BERTH-FWD-10.231.0.0-16`,
      'COMMIT',
      '',
    ].join('\n'))
  })

  it('takes forwarded traffic from FORWARD on a host where Docker made no DOCKER-USER', () => {
    const bare = parseListing('-P INPUT ACCEPT\n-P FORWARD ACCEPT\n-P OUTPUT ACCEPT')
    expect(forwardHookOf(bare)).toBe('FORWARD')
    expect(replaceScript(bare, desiredRules(POLICY, 'FORWARD'), POLICY.pool)).toContain('-I FORWARD 1 -s 10.231.0.0/16')
  })

  it('without a public address allows no host port but DNS', () => {
    const rules = desiredRules({ ...POLICY, publicEdge: null }, 'DOCKER-USER').chains[0]!.rules.map((r) => r.join(' '))
    expect(rules.some((r) => r.includes('multiport'))).toBe(false)
    expect(rules).toHaveLength(4)
  })

  it('on a node, keeps sites off the control plane\'s address but for TCP to its edge ports, after the replies pass', () => {
    const node: SiteFirewallPolicy = { pool: POLICY.pool, publicEdge: null, guardedHost: { address: '10.0.0.1', openPorts: [443, 8080] } }
    const guarded = desiredRules(node, 'DOCKER-USER')
    expect(guarded.chains[1]!.rules.map((r) => r.join(' '))).toEqual([
      `-m conntrack --ctstate RELATED,ESTABLISHED -m comment --comment ${guarded.comment} -j RETURN`,
      `-d 10.0.0.1/32 -p tcp -m multiport --dports 443,8080 -m comment --comment ${guarded.comment} -j RETURN`,
      `-d 10.0.0.1/32 -m comment --comment ${guarded.comment} -j REJECT --reject-with icmp-admin-prohibited`,
      `-d 169.254.0.0/16 -m comment --comment ${guarded.comment} -j REJECT --reject-with icmp-admin-prohibited`,
    ])
    // A node's older rule set (no guarded host) is told apart, found drifted and replaced.
    const older = desiredRules({ ...node, guardedHost: null }, 'DOCKER-USER')
    expect(guarded.comment).not.toBe(older.comment)
    const hostWithOlder = withRules().replaceAll(C, older.comment)
    expect(compareRules(parseListing(hostWithOlder), guarded, POLICY.pool).state).toBe('drifted')
    // No open port: the whole address is refused.
    const closed = desiredRules({ ...node, guardedHost: { address: '10.0.0.1', openPorts: [] } }, 'DOCKER-USER')
    expect(closed.chains[1]!.rules.filter((r) => r.includes('10.0.0.1/32')).map((r) => r.at(-3))).toEqual(['REJECT'])
  })

  it('in a cluster, refuses the closed ports at any address, after the replies and before the guarded host', () => {
    const node: SiteFirewallPolicy = { pool: POLICY.pool, publicEdge: null, guardedHost: { address: '10.0.0.1', openPorts: [8080] }, closedPorts: { tcp: [2377, 7710, 7711, 7946], udp: [4789, 7946] } }
    const rules = desiredRules(node, 'DOCKER-USER')
    expect(rules.chains[1]!.rules.map((r) => r.join(' '))).toEqual([
      `-m conntrack --ctstate RELATED,ESTABLISHED -m comment --comment ${rules.comment} -j RETURN`,
      `-p tcp -m multiport --dports 2377,7710,7711,7946 -m comment --comment ${rules.comment} -j REJECT --reject-with icmp-admin-prohibited`,
      `-p udp -m multiport --dports 4789,7946 -m comment --comment ${rules.comment} -j REJECT --reject-with icmp-admin-prohibited`,
      `-d 10.0.0.1/32 -p tcp -m multiport --dports 8080 -m comment --comment ${rules.comment} -j RETURN`,
      `-d 10.0.0.1/32 -m comment --comment ${rules.comment} -j REJECT --reject-with icmp-admin-prohibited`,
      `-d 169.254.0.0/16 -m comment --comment ${rules.comment} -j REJECT --reject-with icmp-admin-prohibited`,
    ])
    // A node that joined before (no closed ports) has another rule set: found drifted, replaced.
    const before = desiredRules({ ...node, closedPorts: undefined }, 'DOCKER-USER')
    expect(before.comment).not.toBe(rules.comment)
    // A protocol without ports has no rule.
    const tcpOnly = desiredRules({ ...node, closedPorts: { tcp: [2377], udp: [] } }, 'DOCKER-USER')
    expect(tcpOnly.chains[1]!.rules.filter((r) => r.includes('multiport') && r.includes('REJECT')).map((r) => r[1])).toEqual(['tcp'])
  })

  it('leaves the rule set as it was without a guarded host or closed ports: absent and null are the same rules', () => {
    expect(desiredRules({ ...POLICY, guardedHost: null, closedPorts: null }, 'DOCKER-USER')).toEqual(desired)
    expect(desired.chains[1]!.rules).toHaveLength(2)
  })

  it('finds nothing on a fresh host: missing', () => {
    expect(compare(DOCKER_HOST.join('\n'))).toEqual({
      state: 'missing',
      problems: ['chain BERTH-IN-10.231.0.0-16 missing', 'chain BERTH-FWD-10.231.0.0-16 missing', 'no jump from INPUT', 'no jump from DOCKER-USER', 'no jump from FORWARD'],
    })
  })

  it('finds the rules in place as iptables prints them, legacy (unquoted) or nf_tables (quoted)', () => {
    expect(compare(withRules())).toEqual({ state: 'in_place', problems: [] })
    expect(compare(withRules().replaceAll(`"${C}"`, C))).toEqual({ state: 'in_place', problems: [] })
    expect(commentOf(`-A INPUT -m comment --comment "${C}" -j X`)).toBe(C)
  })

  it('leaves other installations\' jumps before its own alone, and theirs do not count as its own', () => {
    const other = '-A INPUT -s 10.9.0.0/16 -m comment --comment "berth:10.9.0.0/16:0badc0de" -j BERTH-IN-10.9.0.0-16'
    expect(compare(withRules([other, `-A INPUT -s 10.231.0.0/16 -m comment --comment "${C}" -j BERTH-IN-10.231.0.0-16`]))).toEqual({ state: 'in_place', problems: [] })
  })

  it('finds drift: a jump deleted, put after a rule of the host, doubled, or from an older policy', () => {
    const jump = `-A INPUT -s 10.231.0.0/16 -m comment --comment "${C}" -j BERTH-IN-10.231.0.0-16`
    expect(compare(withRules([]))).toEqual({ state: 'drifted', problems: ['no jump from INPUT'] })
    expect(compare(withRules(['-A INPUT -p tcp -m tcp --dport 8080 -j ACCEPT', jump]))).toEqual({ state: 'drifted', problems: ['the jump from INPUT is not first'] })
    expect(compare(withRules([jump, jump])).problems).toEqual(['2 jumps from INPUT'])
    const old = jump.replace(C, 'berth:10.231.0.0/16:00000000')
    expect(compare(withRules([old])).problems).toEqual(['stale rule in INPUT', 'no jump from INPUT'])
  })

  it('finds its backstop out of place once the engine made a network (its rules inserted on top of FORWARD), and that alone', () => {
    const lines = withRules().split('\n')
    const at = lines.findIndex((l) => l.startsWith('-A FORWARD -s 10.231.0.0/16'))
    lines.splice(at, 0, '-A FORWARD -o br-0a1b2c3d4e5f -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT', '-A FORWARD -i br-0a1b2c3d4e5f ! -o br-0a1b2c3d4e5f -j ACCEPT')
    expect(compare(lines.join('\n'))).toEqual({ state: 'drifted', problems: ['the jump from FORWARD is not first'] })
  })

  it('finds drift in its own chains: a rule deleted or added by hand', () => {
    const lines = withRules().split('\n')
    const deleted = lines.filter((l) => !l.includes('169.254.0.0/16')).join('\n')
    expect(compare(deleted)).toEqual({ state: 'drifted', problems: ['chain BERTH-FWD-10.231.0.0-16 holds other rules than Berth\'s'] })
    const added = [...lines, '-A BERTH-IN-10.231.0.0-16 -j ACCEPT'].join('\n')
    expect(compare(added).problems).toEqual(['chain BERTH-IN-10.231.0.0-16 holds other rules than Berth\'s'])
  })

  it('replaces drifted rules by deleting every jump of its pool (and no other) before inserting one', () => {
    const jump = `-A INPUT -s 10.231.0.0/16 -m comment --comment "${C}" -j BERTH-IN-10.231.0.0-16`
    const other = '-A INPUT -s 10.9.0.0/16 -m comment --comment "berth:10.9.0.0/16:0badc0de" -j BERTH-IN-10.9.0.0-16'
    const script = replaceScript(parseListing(withRules([other, jump, jump])), desired, POLICY.pool).split('\n')
    expect(script.filter((l) => l.startsWith('-D '))).toEqual([
      jump.replace('-A', '-D'),
      jump.replace('-A', '-D'),
      `-D FORWARD -s 10.231.0.0/16 -m comment --comment "${C}" -j BERTH-FWD-10.231.0.0-16`,
      `-D DOCKER-USER -s 10.231.0.0/16 -m comment --comment "${C}" -j BERTH-FWD-10.231.0.0-16`,
    ])
    expect(script.filter((l) => l.startsWith('-I '))).toHaveLength(3)
  })

  it('removes its jumps and chains, and nothing when there is nothing', () => {
    const script = removeScript(parseListing(withRules()), POLICY.pool)!.split('\n')
    expect(script).toEqual([
      '*filter',
      `-D INPUT -s 10.231.0.0/16 -m comment --comment "${C}" -j BERTH-IN-10.231.0.0-16`,
      `-D FORWARD -s 10.231.0.0/16 -m comment --comment "${C}" -j BERTH-FWD-10.231.0.0-16`,
      `-D DOCKER-USER -s 10.231.0.0/16 -m comment --comment "${C}" -j BERTH-FWD-10.231.0.0-16`,
      '-F BERTH-IN-10.231.0.0-16',
      '-F BERTH-FWD-10.231.0.0-16',
      '-X BERTH-IN-10.231.0.0-16',
      '-X BERTH-FWD-10.231.0.0-16',
      'COMMIT',
      '',
    ])
    expect(removeScript(parseListing(DOCKER_HOST.join('\n')), POLICY.pool)).toBeNull()
  })
})

describe('firewallPolicyOf', () => {
  const policyOf = (env: Record<string, string>) => firewallPolicyOf(loadConfig({ file: null, env }))

  it('normalizes the pool and allows the public edge ports on a public address', () => {
    expect(policyOf({ BERTH_CONTAINERS_SUBNET_POOL: '10.231.7.9/16', BERTH_DNS_PUBLIC_IPV4: '203.0.113.10', BERTH_TLS_LISTEN: '0.0.0.0:443', BERTH_SERVER_LISTEN: '0.0.0.0:80' }))
      .toEqual({ pool: '10.231.0.0/16', publicEdge: { address: '203.0.113.10', ports: [80, 443] }, refusedTcpPorts: [25] })
  })

  it('allows no host port by default: the public address is loopback', () => {
    expect(policyOf({})).toEqual({ pool: '10.231.0.0/16', publicEdge: null, refusedTcpPorts: [25] })
  })

  it('closes the cluster\'s ports (the Swarm\'s, the agents\') at every address on a control plane, and only there', () => {
    expect(policyOf({ BERTH_CLUSTER_ENABLED: 'true', BERTH_CLUSTER_ADDRESS: '10.0.0.1', BERTH_CLUSTER_AGENT_PORT: '9000' }).closedPorts)
      .toEqual({ tcp: [2377, 7946, 9000, 9001], udp: [4789, 7946] })
    expect(policyOf({ BERTH_CLUSTER_ADDRESS: '10.0.0.1' }).closedPorts).toBeUndefined()
  })
})

describe('nodeFirewallPolicyOf', () => {
  const policyOf = (env: Record<string, string>) => nodeFirewallPolicyOf(loadConfig({ file: null, env }))

  it('guards the control plane\'s private address, open on the edge\'s ports only, with the pool and no public edge', () => {
    expect(policyOf({ BERTH_CLUSTER_ADDRESS: '10.0.0.1', BERTH_TLS_LISTEN: '0.0.0.0:443', BERTH_SERVER_LISTEN: '0.0.0.0:80', BERTH_DNS_PUBLIC_IPV4: '203.0.113.10' }))
      .toEqual({ pool: '10.231.0.0/16', publicEdge: null, guardedHost: { address: '10.0.0.1', openPorts: [80, 443] }, closedPorts: { tcp: [2377, 7710, 7711, 7946], udp: [4789, 7946] }, blockedHosts: [], refusedTcpPorts: [25] })
    expect(policyOf({ BERTH_CLUSTER_ADDRESS: '10.0.0.1' })?.guardedHost).toEqual({ address: '10.0.0.1', openPorts: [8080] })
  })

  it('guards nothing but IPv4 (the rules are iptables ones), and is null with the firewall off', () => {
    expect(policyOf({ BERTH_CLUSTER_ADDRESS: 'fd00::1' })?.guardedHost).toBeNull()
    expect(policyOf({ BERTH_CLUSTER_ADDRESS: '10.0.0.1', BERTH_CONTAINERS_FIREWALL: 'false' })).toBeNull()
  })
})
