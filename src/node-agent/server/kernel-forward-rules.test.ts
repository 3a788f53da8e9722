import { describe, expect, it } from 'vitest'
import { isIpv4 } from '../../lib/ip'
import { compareRules, compareTagged, desiredRules, parseListing, removeTaggedScript, replaceTaggedScript } from '../../drivers/firewall/iptables-rules'
import { ACCEPT_CHAIN, desiredForwardRules, DNAT_CHAIN, FORWARDS_TAG, SNAT_CHAIN, swapScript, type KernelForward } from './kernel-forward-rules'

const ENDS = { node: '10.0.0.2', control: '10.0.0.1' }
const SHOP: KernelForward = { slug: 'shop', port: 41000, target: { address: '10.231.0.2', port: 8080 } }
const BLOG: KernelForward = { slug: 'blog', port: 39000, target: { address: '10.231.0.18', port: 8080 } }
const rules = desiredForwardRules(ENDS, [SHOP, BLOG], 'DOCKER-USER')
const C = rules.comment

/** A node's nat table as Docker leaves it (iptables-nft 1.8.9). */
const DOCKER_NAT = ['-P PREROUTING ACCEPT', '-P OUTPUT ACCEPT', '-N DOCKER', '-A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER', '-A DOCKER -i docker0 -j RETURN']
/** Its filter table, with the site firewall of the pool in DOCKER-USER already (its jump first). */
const SITE_JUMP = '-A DOCKER-USER -s 10.231.0.0/16 -m comment --comment "berth:10.231.0.0/16:0badc0de" -j BERTH-FWD-10.231.0.0-16'
const DOCKER_FILTER = ['-P FORWARD DROP', '-N DOCKER-USER', '-N BERTH-FWD-10.231.0.0-16', '-A FORWARD -j DOCKER-USER', SITE_JUMP, '-A DOCKER-USER -j RETURN']

/** The nat table with the rules in place, as iptables-nft prints them. */
const natWith = (prerouting = [`-A PREROUTING -s 10.0.0.1/32 -d 10.0.0.2/32 -p tcp -m comment --comment "${C}" -j ${DNAT_CHAIN}`]) => [
  ...DOCKER_NAT.slice(0, 3),
  `-N ${DNAT_CHAIN}`,
  `-N ${SNAT_CHAIN}`,
  ...prerouting,
  DOCKER_NAT[3]!,
  `-A POSTROUTING -s 10.0.0.1/32 -p tcp -m comment --comment "${C}" -j ${SNAT_CHAIN}`,
  DOCKER_NAT[4]!,
  `-A ${DNAT_CHAIN} -s 10.0.0.1/32 -d 10.0.0.2/32 -p tcp -m tcp --dport 39000 -m comment --comment "${C}" -j DNAT --to-destination 10.231.0.18:8080`,
  `-A ${DNAT_CHAIN} -s 10.0.0.1/32 -d 10.0.0.2/32 -p tcp -m tcp --dport 41000 -m comment --comment "${C}" -j DNAT --to-destination 10.231.0.2:8080`,
  `-A ${SNAT_CHAIN} -s 10.0.0.1/32 -d 10.231.0.18/32 -p tcp -m tcp --dport 8080 -m conntrack --ctstate DNAT --ctorigdst 10.0.0.2/32 --ctorigdstport 39000 -m comment --comment "${C}" -j MASQUERADE`,
  `-A ${SNAT_CHAIN} -s 10.0.0.1/32 -d 10.231.0.2/32 -p tcp -m tcp --dport 8080 -m conntrack --ctstate DNAT --ctorigdst 10.0.0.2/32 --ctorigdstport 41000 -m comment --comment "${C}" -j MASQUERADE`,
].join('\n')

describe('the kernel forwards as iptables rules', () => {
  it('rewrites the control address\'s connections to each forward port towards its container, from the node\'s gateway there, and accepts only those', () => {
    expect(C).toMatch(/^berth:node-forwards:[0-9a-f]{8}$/)
    expect(replaceTaggedScript('nat', parseListing(DOCKER_NAT.join('\n')), rules.nat, FORWARDS_TAG)).toBe([
      '*nat',
      `:${DNAT_CHAIN} - [0:0]`,
      `:${SNAT_CHAIN} - [0:0]`,
      `-A ${DNAT_CHAIN} -s 10.0.0.1/32 -d 10.0.0.2/32 -p tcp --dport 39000 -m comment --comment ${C} -j DNAT --to-destination 10.231.0.18:8080`,
      `-A ${DNAT_CHAIN} -s 10.0.0.1/32 -d 10.0.0.2/32 -p tcp --dport 41000 -m comment --comment ${C} -j DNAT --to-destination 10.231.0.2:8080`,
      // The container sees the edge's connection from its gateway, as on one box: the only address its nginx trusts X-Forwarded-For from.
      `-A ${SNAT_CHAIN} -s 10.0.0.1/32 -d 10.231.0.18/32 -p tcp --dport 8080 -m conntrack --ctstate DNAT --ctorigdst 10.0.0.2/32 --ctorigdstport 39000 -m comment --comment ${C} -j MASQUERADE`,
      `-A ${SNAT_CHAIN} -s 10.0.0.1/32 -d 10.231.0.2/32 -p tcp --dport 8080 -m conntrack --ctstate DNAT --ctorigdst 10.0.0.2/32 --ctorigdstport 41000 -m comment --comment ${C} -j MASQUERADE`,
      `-I PREROUTING 1 -s 10.0.0.1/32 -d 10.0.0.2/32 -p tcp -m comment --comment ${C} -j ${DNAT_CHAIN}`,
      `-I POSTROUTING 1 -s 10.0.0.1/32 -p tcp -m comment --comment ${C} -j ${SNAT_CHAIN}`,
      'COMMIT',
      '',
    ].join('\n'))
    expect(replaceTaggedScript('filter', parseListing(DOCKER_FILTER.join('\n')), rules.filter, FORWARDS_TAG)).toBe([
      '*filter',
      `:${ACCEPT_CHAIN} - [0:0]`,
      `-A ${ACCEPT_CHAIN} -s 10.0.0.1/32 -d 10.231.0.18/32 -p tcp --dport 8080 -m conntrack --ctstate NEW --ctorigdst 10.0.0.2/32 --ctorigdstport 39000 -m comment --comment ${C} -j ACCEPT`,
      `-A ${ACCEPT_CHAIN} -s 10.0.0.1/32 -d 10.231.0.2/32 -p tcp --dport 8080 -m conntrack --ctstate NEW --ctorigdst 10.0.0.2/32 --ctorigdstport 41000 -m comment --comment ${C} -j ACCEPT`,
      `-I DOCKER-USER 1 -s 10.0.0.1/32 -p tcp -m comment --comment ${C} -j ${ACCEPT_CHAIN}`,
      'COMMIT',
      '',
    ].join('\n'))
  })

  it('names its chains apart from the site firewall\'s, whatever the pool', () => {
    const site = desiredRules({ pool: '10.231.0.0/16', publicEdge: null }, 'DOCKER-USER')
    const siteChains = site.chains.map((c) => c.name)
    expect(siteChains).not.toContain(DNAT_CHAIN)
    expect(siteChains).not.toContain(ACCEPT_CHAIN)
    expect(FORWARDS_TAG.startsWith(site.comment.slice(0, site.comment.lastIndexOf(':') + 1))).toBe(false)
  })

  it('is found in place as listed, whichever order the forwards were given in; another set is drift', () => {
    expect(compareTagged(parseListing(natWith()), rules.nat, FORWARDS_TAG)).toEqual({ state: 'in_place', problems: [] })
    expect(compareTagged(parseListing(natWith()), desiredForwardRules(ENDS, [BLOG, SHOP], 'DOCKER-USER').nat, FORWARDS_TAG).state).toBe('in_place')
    // A retarget (the container came back on another address) is another rule set.
    const moved = desiredForwardRules(ENDS, [BLOG, { ...SHOP, target: { address: '10.231.0.3', port: 8080 } }], 'DOCKER-USER')
    expect(moved.comment).not.toBe(C)
    expect(compareTagged(parseListing(natWith()), moved.nat, FORWARDS_TAG).state).toBe('drifted')
    expect(compareTagged(parseListing(DOCKER_NAT.join('\n')), rules.nat, FORWARDS_TAG).state).toBe('missing')
    expect(compareTagged(parseListing(natWith([])), rules.nat, FORWARDS_TAG).problems).toEqual(['no jump from PREROUTING'])
  })

  it('goes first in DOCKER-USER beside the site firewall: neither takes the other\'s jump for drift', () => {
    const ours = `-A DOCKER-USER -s 10.0.0.1/32 -p tcp -m comment --comment "${C}" -j ${ACCEPT_CHAIN}`
    const accepts = rules.filter.chains[0]!.rules.map((r) => `-A ${ACCEPT_CHAIN} ${r.join(' ')}`)
    const filter = parseListing([...DOCKER_FILTER.slice(0, 3), `-N ${ACCEPT_CHAIN}`, DOCKER_FILTER[3]!, ours, SITE_JUMP, DOCKER_FILTER[5]!, ...accepts].join('\n'))
    expect(compareTagged(filter, rules.filter, FORWARDS_TAG)).toEqual({ state: 'in_place', problems: [] })
    // The site firewall, seeing our jump before its own, stays in place too (its other rules aside).
    const site = compareRules(filter, desiredRules({ pool: '10.231.0.0/16', publicEdge: null }, 'DOCKER-USER'), '10.231.0.0/16')
    expect(site.problems).not.toContain('the jump from DOCKER-USER is not first')
  })

  it('with no forwards keeps its chains empty; its removal takes the jump and chain away, and only them', () => {
    const none = desiredForwardRules(ENDS, [], 'DOCKER-USER')
    expect(none.nat.chains[0]!.rules).toEqual([])
    expect(removeTaggedScript('nat', parseListing(natWith()), FORWARDS_TAG, [DNAT_CHAIN, SNAT_CHAIN])).toBe([
      '*nat',
      `-D PREROUTING -s 10.0.0.1/32 -d 10.0.0.2/32 -p tcp -m comment --comment "${C}" -j ${DNAT_CHAIN}`,
      `-D POSTROUTING -s 10.0.0.1/32 -p tcp -m comment --comment "${C}" -j ${SNAT_CHAIN}`,
      `-F ${DNAT_CHAIN}`,
      `-F ${SNAT_CHAIN}`,
      `-X ${DNAT_CHAIN}`,
      `-X ${SNAT_CHAIN}`,
      'COMMIT',
      '',
    ].join('\n'))
    expect(removeTaggedScript('filter', parseListing(DOCKER_FILTER.join('\n')), FORWARDS_TAG, [ACCEPT_CHAIN])).toBeNull()
  })

  it('swaps the rule set last applied for a new one in one script per table, without a listing', () => {
    const moved = desiredForwardRules(ENDS, [BLOG, { ...SHOP, target: { address: '10.231.0.3', port: 8080 } }], 'DOCKER-USER')
    const M = moved.comment
    const script = swapScript(rules, moved)!.split('\n')
    expect(script.slice(0, 7)).toEqual([
      '*nat',
      `:${DNAT_CHAIN} - [0:0]`,
      `:${SNAT_CHAIN} - [0:0]`,
      `-D PREROUTING -s 10.0.0.1/32 -d 10.0.0.2/32 -p tcp -m comment --comment ${C} -j ${DNAT_CHAIN}`,
      `-D POSTROUTING -s 10.0.0.1/32 -p tcp -m comment --comment ${C} -j ${SNAT_CHAIN}`,
      `-A ${DNAT_CHAIN} -s 10.0.0.1/32 -d 10.0.0.2/32 -p tcp --dport 39000 -m comment --comment ${M} -j DNAT --to-destination 10.231.0.18:8080`,
      `-A ${DNAT_CHAIN} -s 10.0.0.1/32 -d 10.0.0.2/32 -p tcp --dport 41000 -m comment --comment ${M} -j DNAT --to-destination 10.231.0.3:8080`,
    ])
    expect(script).toContain(`-I PREROUTING 1 -s 10.0.0.1/32 -d 10.0.0.2/32 -p tcp -m comment --comment ${M} -j ${DNAT_CHAIN}`)
    expect(script).toContain(`-I POSTROUTING 1 -s 10.0.0.1/32 -p tcp -m comment --comment ${M} -j ${SNAT_CHAIN}`)
    expect(script.slice(script.indexOf('*filter') - 1, script.indexOf('*filter') + 2)).toEqual(['COMMIT', '*filter', `:${ACCEPT_CHAIN} - [0:0]`])
    expect(script).toContain(`-D DOCKER-USER -s 10.0.0.1/32 -p tcp -m comment --comment ${C} -j ${ACCEPT_CHAIN}`)
    expect(script).toContain(`-I DOCKER-USER 1 -s 10.0.0.1/32 -p tcp -m comment --comment ${M} -j ${ACCEPT_CHAIN}`)
    expect(script.slice(-2)).toEqual(['COMMIT', ''])
    expect(swapScript(rules, desiredForwardRules(ENDS, [BLOG, SHOP], 'DOCKER-USER'))).toBeNull()
  })

  it('carries IPv4 only', () => {
    expect(isIpv4('10.231.0.2')).toBe(true)
    expect(isIpv4('fd00::2')).toBe(false)
    expect(isIpv4('10.231.0.256')).toBe(false)
  })
})
