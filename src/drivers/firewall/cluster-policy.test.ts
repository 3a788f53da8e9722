import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../config/config'
import { desiredRules, MULTIPORT_MAX } from './iptables-rules'
import { IptablesFirewall } from './iptables'
import { parseFirewallPolicy } from './policy'
import { firewallPolicyOf, nodeFirewallPolicyOf, selectFirewall, type FirewalledNode } from './select'

/**
 * The site firewall of a cluster follows its nodes (issue 36, item 3): every node's private
 * address blocked (its forwards accept the control plane's address, which a site on the control
 * plane leaves with), and every node's own agent ports closed (a node joined with --port).
 */
const CLUSTER = { BERTH_CLUSTER_ENABLED: 'true', BERTH_CLUSTER_ADDRESS: '10.0.0.1' }
const config = loadConfig({ file: null, env: CLUSTER })
const NODES: FirewalledNode[] = [{ address: '10.0.0.20', agentPort: 7710 }, { address: '10.0.0.3', agentPort: 9100 }]

describe('the control plane\'s site firewall in a cluster', () => {
  it('blocks every node\'s private address and closes each node\'s own agent ports', () => {
    const policy = firewallPolicyOf(config, NODES)
    expect(policy.blockedHosts).toEqual(['10.0.0.3', '10.0.0.20'])
    expect(policy.closedPorts).toEqual({ tcp: [2377, 7710, 7711, 7946, 9100, 9101], udp: [4789, 7946] })
    const forward = desiredRules(policy, 'DOCKER-USER').chains[1]!.rules.map((r) => r.join(' '))
    expect(forward.filter((r) => r.includes('-d 10.0.0.3/32') || r.includes('-d 10.0.0.20/32'))).toEqual([
      expect.stringMatching(/^-d 10\.0\.0\.3\/32 -m comment --comment \S+ -j REJECT --reject-with icmp-admin-prohibited$/),
      expect.stringMatching(/^-d 10\.0\.0\.20\/32 -m comment --comment \S+ -j REJECT --reject-with icmp-admin-prohibited$/),
    ])
    // The replies to connections made into the sites still pass first.
    expect(forward[0]).toContain('--ctstate RELATED,ESTABLISHED')
  })

  it('never blocks cluster.address itself, nor anything but IPv4', () => {
    expect(firewallPolicyOf(config, [{ address: '10.0.0.1', agentPort: 7710 }, { address: 'fd00::2', agentPort: 7710 }]).blockedHosts).toEqual([])
  })

  it('follows the node list: the firewall\'s policy is read at each pass', () => {
    const nodes: FirewalledNode[] = []
    const firewall = selectFirewall({ ...config, containers: { ...config.containers, firewall: true } }, () => nodes) as IptablesFirewall
    expect(firewall.policy.blockedHosts).toEqual([])
    nodes.push({ address: '10.0.0.2', agentPort: 7800 })
    expect(firewall.policy.blockedHosts).toEqual(['10.0.0.2'])
    expect(firewall.policy.closedPorts?.tcp).toContain(7801)
  })

  it('splits closed ports into rules of at most 15 (iptables\' multiport limit)', () => {
    const many = Array.from({ length: 20 }, (_, i) => ({ address: `10.0.1.${i + 1}`, agentPort: 20000 + i * 2 }))
    const policy = firewallPolicyOf(config, many)
    const tcp = desiredRules(policy, 'DOCKER-USER').chains[1]!.rules.filter((r) => r.includes('tcp') && r.includes('--dports') && !r.includes('tcp-reset'))
    expect(tcp.length).toBe(Math.ceil(policy.closedPorts!.tcp.length / MULTIPORT_MAX))
    for (const rule of tcp) expect(rule[rule.indexOf('--dports') + 1]!.split(',').length).toBeLessThanOrEqual(MULTIPORT_MAX)
  })
})

describe('a node\'s site firewall in a cluster', () => {
  it('blocks the other nodes too, closes their ports, and travels as JSON the agent accepts', () => {
    const policy = nodeFirewallPolicyOf({ ...config, containers: { ...config.containers, firewall: true } }, NODES)!
    expect(policy.blockedHosts).toEqual(['10.0.0.3', '10.0.0.20'])
    expect(policy.closedPorts?.tcp).toEqual([2377, 7710, 7711, 7946, 9100, 9101])
    expect(parseFirewallPolicy(JSON.parse(JSON.stringify(policy)))).toEqual({ policy })
  })

  it('refuses blocked hosts that are not IPv4 addresses in order', () => {
    const base = { pool: '10.231.0.0/16', publicEdge: null }
    expect(parseFirewallPolicy({ ...base, blockedHosts: ['10.0.0.20', '10.0.0.3'] })).toMatchObject({ param: 'policy.blockedHosts' })
    expect(parseFirewallPolicy({ ...base, blockedHosts: ['node-b'] })).toMatchObject({ param: 'policy.blockedHosts' })
    expect(parseFirewallPolicy({ ...base, blockedHosts: null })).toEqual({ policy: { ...base, blockedHosts: null } })
  })
})
