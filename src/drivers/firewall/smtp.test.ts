import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../config/config'
import { samePolicy } from '../../domain/cluster/health'
import { desiredRules } from './iptables-rules'
import { parseFirewallPolicy } from './policy'
import { firewallPolicyOf, nodeFirewallPolicyOf } from './select'

/**
 * No spam from sites (issue 38, item 5): the site firewall refuses sites' outbound TCP 25 with a
 * TCP reset, on the single box and on a cluster's nodes, unless containers.outbound_smtp opens it;
 * 465 and 587 are never touched. The rules' effect on a real site: site-firewall.solo.e2e and
 * cluster-security.e2e.
 */
const boxed = loadConfig({ file: null, env: {} })
const open = loadConfig({ file: null, env: { BERTH_CONTAINERS_OUTBOUND_SMTP: 'true' } })
const cluster = (env: Record<string, string> = {}) => loadConfig({ file: null, env: { BERTH_CLUSTER_ENABLED: 'true', BERTH_CLUSTER_ADDRESS: '10.0.0.1', ...env } })
const forwardRules = (policy: Parameters<typeof desiredRules>[0]) => desiredRules(policy, 'DOCKER-USER').chains[1]!.rules.map((r) => r.join(' '))

describe('outbound SMTP from sites', () => {
  it('is refused by default: TCP 25 at any address, with a reset, right after the replies; 465 and 587 appear in no rule', () => {
    expect(boxed.containers.outboundSmtp).toBe(false)
    const policy = firewallPolicyOf(boxed)
    expect(policy.refusedTcpPorts).toEqual([25])
    const forward = forwardRules(policy)
    expect(forward[0]).toContain('--ctstate RELATED,ESTABLISHED')
    expect(forward[1]).toMatch(/^-p tcp -m multiport --dports 25 -m comment --comment \S+ -j REJECT --reject-with tcp-reset$/)
    const all = desiredRules(policy, 'DOCKER-USER').chains.flatMap((c) => c.rules.map((r) => r.join(' ')))
    expect(all.filter((r) => /\b(465|587)\b/.test(r))).toEqual([])
  })

  it('is let through with containers.outbound_smtp = true: no rule names port 25', () => {
    expect(open.containers.outboundSmtp).toBe(true)
    const policy = firewallPolicyOf(open)
    expect(policy.refusedTcpPorts).toBeUndefined()
    expect(forwardRules(policy).filter((r) => /--dports? 25\b/.test(r))).toEqual([])
    // The rule set is another: a running Berth's keeper replaces the old one at its next pass.
    expect(desiredRules(policy, 'DOCKER-USER').comment).not.toBe(desiredRules(firewallPolicyOf(boxed), 'DOCKER-USER').comment)
  })

  it('is refused on a cluster\'s nodes and control plane alike, and opened on both by the same key', () => {
    expect(nodeFirewallPolicyOf(cluster())!.refusedTcpPorts).toEqual([25])
    expect(firewallPolicyOf(cluster()).refusedTcpPorts).toEqual([25])
    expect(nodeFirewallPolicyOf(cluster({ BERTH_CONTAINERS_OUTBOUND_SMTP: 'true' }))!.refusedTcpPorts).toBeUndefined()
    expect(forwardRules(nodeFirewallPolicyOf(cluster())!).some((r) => /--dports 25 .*tcp-reset$/.test(r))).toBe(true)
  })

  it('travels to a node: the policy parses with it, and a node keeping a policy without it is sent the new one', () => {
    const policy = nodeFirewallPolicyOf(cluster())!
    expect(parseFirewallPolicy(JSON.parse(JSON.stringify(policy)))).toEqual({ policy })
    const { refusedTcpPorts: _, ...before } = policy
    expect(samePolicy(before, policy)).toBe(false)
    expect(samePolicy({ ...before, refusedTcpPorts: [] }, before)).toBe(true)
    expect(parseFirewallPolicy({ ...policy, refusedTcpPorts: [587, 25] })).toEqual({ param: 'policy.refusedTcpPorts', error: expect.stringContaining('ascending') })
    expect(parseFirewallPolicy({ ...policy, refusedTcpPorts: [0] })).toMatchObject({ param: 'policy.refusedTcpPorts' })
  })

  it('is refused or opened by a boolean key, and anything else is refused at load naming the key', () => {
    expect(() => loadConfig({ file: null, env: { BERTH_CONTAINERS_OUTBOUND_SMTP: 'maybe' } })).toThrow(/BERTH_CONTAINERS_OUTBOUND_SMTP must be/)
  })
})
