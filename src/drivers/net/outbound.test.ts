import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../config/config'
import { HostNotFoundError, OutboundRefusedError } from './errors'
import { OutboundCheck, outboundPolicyOf, type Resolver } from './outbound'

/** A resolver of our own: names of the test's zone, nothing else (the system's is not asked). */
const zone: Record<string, string[]> = {
  'localhost': ['127.0.0.1', '::1'],
  'git.example': ['93.184.215.14'],
  'inside.example': ['10.1.2.3'],
  'mixed.example': ['93.184.215.14', '192.168.1.9'],
  'v6inside.example': ['fd12::5'],
  'berth.example': ['5.6.7.8'],
  'box.example': ['5.6.7.9'],
}
const resolver: Resolver = async (host) => {
  const found = zone[host]
  if (!found) throw new Error(`ENOTFOUND ${host}`)
  return found
}

const check = (allow: string[] = [], own: string[] = ['berth.example', '0.0.0.0']) =>
  new OutboundCheck({ allowNetworks: allow, ownHosts: own }, resolver)

async function reasonOf(c: OutboundCheck, host: string): Promise<string> {
  try {
    await c.check(host)
    return 'allowed'
  } catch (err) {
    if (err instanceof OutboundRefusedError) return err.reason
    if (err instanceof HostNotFoundError) return 'not_found'
    throw err
  }
}

describe('the outbound check (issue 39: a git source may not reach inside)', () => {
  it.each([
    ['localhost', 'loopback'],
    ['127.1', 'loopback'],
    ['0x7f000001', 'loopback'],
    ['2130706433', 'loopback'],
    ['0177.0.0.1', 'loopback'],
    ['[::1]', 'loopback'],
    ['::1', 'loopback'],
    ['[::ffff:127.0.0.1]', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['192.168.0.1', 'private'],
    ['100.64.0.1', 'private'],
    ['169.254.169.254', 'link_local'],
    ['[fe80::1]', 'link_local'],
    ['fd00::1', 'unique_local'],
    ['[64:ff9b::a00:1]', 'private'],
    ['[2002:a9fe:a9fe::]', 'link_local'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['192.0.2.1', 'reserved'],
    ['inside.example', 'private'],
    ['mixed.example', 'private'],
    ['v6inside.example', 'unique_local'],
    ['berth.example', 'berth'],
    ['5.6.7.8', 'berth'],
    ['nowhere.example', 'not_found'],
  ])('%s is refused (%s)', async (host, reason) => {
    expect(await reasonOf(check(), host)).toBe(reason)
  })

  it('a public host is allowed and pinned to the address checked', async () => {
    expect(await check().check('git.example')).toEqual({ address: '93.184.215.14', family: 4, listed: false })
    expect(await check().check('[2606:4700::1111]')).toEqual({ address: '2606:4700::1111', family: 6, listed: false })
    expect(await check().check('1.1.1.1')).toEqual({ address: '1.1.1.1', family: 4, listed: false })
  })

  it('says which host, what it resolved to and what to do', async () => {
    const err = await check().check('inside.example').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(OutboundRefusedError)
    expect((err as Error).message).toBe('The host "inside.example" resolves to 10.1.2.3, which is a private network address; Berth connects only to public addresses. Use a host on the public internet, or ask the hoster to list its network in outbound.allow_networks.')
    expect((err as OutboundRefusedError).address).toBe('10.1.2.3')
  })

  it('outbound.allow_networks lets a listed network through, and only it', async () => {
    const c = check(['10.1.0.0/16', 'fd12::/64', '127.0.0.0/8'])
    expect(await c.check('inside.example')).toEqual({ address: '10.1.2.3', family: 4, listed: true })
    expect(await c.check('v6inside.example')).toEqual({ address: 'fd12::5', family: 6, listed: true })
    expect(await c.check('0x7f000001')).toEqual({ address: '127.0.0.1', family: 4, listed: true })
    // the mapped form of a listed IPv4 network is inside it too
    expect(await c.check('[::ffff:10.1.9.9]')).toEqual({ address: '::ffff:a01:909', family: 6, listed: true })
    expect(await reasonOf(c, '10.2.0.1')).toBe('private')
    expect(await reasonOf(c, '169.254.169.254')).toBe('link_local')
  })

  it("takes Berth's own addresses from the config: listeners, site_url's host, public addresses, cluster.address", async () => {
    const config = loadConfig({
      file: null,
      env: {
        BERTH_SERVER_LISTEN: '5.6.7.10:8080', BERTH_SERVER_SITE_URL: 'https://box.example', BERTH_DNS_PUBLIC_IPV4: '5.6.7.11',
        BERTH_CLUSTER_ADDRESS: '5.6.7.12', BERTH_OUTBOUND_ALLOW_NETWORKS: '10.30.0.0/16, fd00:30::/64',
      },
    })
    const policy = outboundPolicyOf(config)
    expect(policy.allowNetworks).toEqual(['10.30.0.0/16', 'fd00:30::/64'])
    const c = new OutboundCheck(policy, resolver)
    for (const own of ['5.6.7.10', '5.6.7.11', '5.6.7.12', 'box.example', '5.6.7.9']) expect(await reasonOf(c, own)).toBe('berth')
    expect(await reasonOf(c, '10.30.1.1')).toBe('allowed')
  })

  it("listening on every address, the box's interfaces' addresses are Berth's own", async () => {
    const config = loadConfig({ file: null, env: { BERTH_SERVER_LISTEN: '0.0.0.0:8080' } })
    const eth0 = { address: '5.6.7.20', netmask: '255.255.255.0', family: 'IPv4', mac: '00:00:00:00:00:00', internal: false, cidr: '5.6.7.20/24' } as const
    const policy = outboundPolicyOf(config, { eth0: [eth0] })
    expect(await reasonOf(new OutboundCheck(policy, resolver), '5.6.7.20')).toBe('berth')
    const onOne = outboundPolicyOf(loadConfig({ file: null, env: { BERTH_SERVER_LISTEN: '5.6.7.21:8080', BERTH_DNS_LISTEN: 'off' } }), { eth0: [eth0] })
    expect(await reasonOf(new OutboundCheck(onOne, resolver), '5.6.7.20')).toBe('allowed')
  })

  it('the config refuses an entry of outbound.allow_networks that is not a CIDR range, naming it', () => {
    for (const bad of ['10.0.0.1', 'private', '10.0.0.0/33']) {
      expect(() => loadConfig({ file: null, env: { BERTH_OUTBOUND_ALLOW_NETWORKS: `192.168.0.0/16,${bad}` } })).toThrow(`'${bad}' is not a CIDR range`)
    }
  })
})
