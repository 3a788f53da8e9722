import { describe, expect, it } from 'vitest'
import { parseFirewallPolicy } from './policy'
import type { SiteFirewallPolicy } from './types'

const NODE: SiteFirewallPolicy = { pool: '10.231.0.0/16', publicEdge: null, guardedHost: { address: '10.0.0.1', openPorts: [80, 443] }, closedPorts: { tcp: [2377, 7710, 7711, 7946], udp: [4789, 7946] } }

describe('a site firewall policy from JSON', () => {
  it('takes the policies Berth sends (a node\'s, the single box\'s, none) as they are', () => {
    expect(parseFirewallPolicy(JSON.parse(JSON.stringify(NODE)))).toEqual({ policy: NODE })
    expect(parseFirewallPolicy({ pool: '10.231.0.0/16', publicEdge: { address: '203.0.113.10', ports: [80, 443] } })).toEqual({ policy: { pool: '10.231.0.0/16', publicEdge: { address: '203.0.113.10', ports: [80, 443] } } })
    expect(parseFirewallPolicy(null)).toEqual({ policy: null })
  })

  it.each([
    ['a list', [], 'policy'],
    ['an unknown field', { ...NODE, extra: 1 }, 'policy.extra'],
    ['no pool', { publicEdge: null }, 'policy.pool'],
    ['an IPv6 pool', { ...NODE, pool: 'fd00::/64' }, 'policy.pool'],
    ['a pool with a shell in it', { ...NODE, pool: '10.0.0.0/8; rm -rf /' }, 'policy.pool'],
    ['a guarded host by name', { ...NODE, guardedHost: { address: 'control.example', openPorts: [80] } }, 'policy.guardedHost'],
    ['port 0', { ...NODE, closedPorts: { tcp: [0], udp: [] } }, 'policy.closedPorts'],
    ['port 65536', { ...NODE, guardedHost: { address: '10.0.0.1', openPorts: [65536] } }, 'policy.guardedHost'],
    ['ports out of order', { ...NODE, closedPorts: { tcp: [7946, 2377], udp: [] } }, 'policy.closedPorts'],
    ['a port as a string', { ...NODE, closedPorts: { tcp: ['2377'], udp: [] } }, 'policy.closedPorts'],
  ])('refuses %s, naming the field', (_name, value, param) => {
    expect(parseFirewallPolicy(value)).toMatchObject({ param })
  })
})
