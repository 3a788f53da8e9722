import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../config/config'
import type { BoxProbes } from '../../drivers/host/types'
import { boxProbes } from '../../drivers/host/probes'
import { checkEngine, checkPort, checkSiteDisks, checkUnit, compareVersions, DISK_COMMANDS, listenersOf } from './box-checks'
import { checkAcme, checkClock, checkDelegation } from './net-checks'
import { runChecks } from './run'

/**
 * The judgements `berth doctor` makes on states this machine cannot be put in (an old engine, a
 * unit disabled, a box without systemd, a CA answering something else); the states it can be put
 * in are planted in test/doctor.e2e.test.ts on the compiled binary.
 */
const config = (env: Record<string, string> = {}) => loadConfig({ file: null, env })

/** A box where every probe answers well; `over` changes what a test is about. */
function box(over: Partial<BoxProbes> = {}): BoxProbes {
  return {
    now: () => Date.parse('2026-11-26T12:00:00Z'),
    writeProbe: async () => {},
    existingAncestor: (dir) => dir,
    diskSpace: () => ({ freeBytes: 100 * 1024 ** 3, totalBytes: 200 * 1024 ** 3 }),
    missingCommands: () => [],
    loopDevices: () => true,
    engineVersion: async () => ({ version: '27.5.1', apiVersion: '1.47' }),
    missingImages: async () => [],
    portState: async () => ({ taken: false }),
    fetchDirectory: async () => ({ status: 200, dateMs: Date.parse('2026-11-26T12:00:00Z'), body: { newNonce: 'n', newAccount: 'a', newOrder: 'o' } }),
    resolveNs: async () => [],
    resolveAddresses: async () => [],
    unitState: async () => 'enabled',
    offsiteProbe: async () => {},
    ...over,
  }
}

describe('berth doctor judgements', () => {
  it('compares engine API versions part by part (1.9 is older than 1.41)', () => {
    expect(compareVersions('1.41', '1.41')).toBe(0)
    expect(compareVersions('1.9', '1.41')).toBeLessThan(0)
    expect(compareVersions('1.47', '1.41')).toBeGreaterThan(0)
  })

  it('FAILs an engine older than Docker 20.10, saying the minimum and why', async () => {
    const res = await checkEngine(config(), box({ engineVersion: async () => ({ version: '19.03.15', apiVersion: '1.40' }) }))
    expect(res.status).toBe('FAIL')
    expect(res.detail).toContain('older than Docker 20.10 (API 1.41)')
    expect(res.detail).toContain('cgroup v2')
  })

  it('names every process on a taken port, and PASSes only when all of them are berth', async () => {
    const [listener] = listenersOf(config({ BERTH_SERVER_LISTEN: '0.0.0.0:80' }))
    const held = (...commands: string[]) => box({ portState: async () => ({ taken: true, holders: commands.map((command, i) => ({ pid: 100 + i, command })) }) })
    expect((await checkPort(listener!, held('berth', 'berth'))).status).toBe('PASS')
    const mixed = await checkPort(listener!, held('berth', 'nginx'))
    expect(mixed).toMatchObject({ status: 'FAIL', name: 'port 0.0.0.0:80/tcp', detail: 'server.listen: taken by berth (pid 100), nginx (pid 101)' })
    expect((await checkPort(listener!, held())).detail).toContain('a process this box does not show')
  })

  it('PASSes a port systemd (PID 1) holds for berth.socket, alone or shared with berth, only while that unit is enabled', async () => {
    const [, , udp] = listenersOf(config({ BERTH_DNS_LISTEN: '0.0.0.0:53' }))
    const holders = [{ pid: 1, command: 'systemd' }, { pid: 190, command: 'berth' }]
    const shared = (unit: string) => box({ portState: async () => ({ taken: true, holders }), unitState: async (u) => (u === 'berth.socket' ? unit : 'enabled') })
    expect(await checkPort(udp!, shared('enabled'))).toMatchObject({ status: 'PASS', detail: "dns.listen: held by Berth's socket unit, systemd (pid 1), berth (pid 190)" })
    expect((await checkPort(udp!, shared('not-found'))).status).toBe('FAIL')
    const alone = box({ portState: async () => ({ taken: true, holders: [{ pid: 1, command: 'systemd' }] }) })
    expect((await checkPort(udp!, alone)).status).toBe('PASS')
  })

  it('lists only the listeners the config opens', () => {
    expect(listenersOf(config({ BERTH_DNS_LISTEN: 'off' })).map((l) => l.key)).toEqual(['server.listen'])
    expect(listenersOf(config({ BERTH_TLS_LISTEN: '0.0.0.0:443', BERTH_DNS_LISTEN: '0.0.0.0:53' })).map((l) => `${l.key}/${l.protocol}`))
      .toEqual(['server.listen/tcp', 'tls.listen/tcp', 'dns.listen/tcp', 'dns.listen/udp'])
  })

  it.each([
    ['enabled', 'PASS', ''],
    ['disabled', 'WARN', 'systemctl enable --now berth'],
    ['masked', 'WARN', 'systemctl enable --now berth'],
    ['not-found', 'WARN', 'berth install, then systemctl enable --now berth'],
    [null, 'WARN', 'berth install'],
  ] as const)('the unit %s: %s', async (state, status, fix) => {
    const res = await checkUnit(box({ unitState: async () => state }))
    expect(res.status).toBe(status)
    expect(res.fix).toContain(fix)
  })

  const acme = config({ BERTH_TLS_ACME_DIRECTORY: 'https://ca.example.net/dir', BERTH_TLS_ACME_EMAIL: 'ops@example.net', BERTH_TLS_ACME_TERMS_AGREED: 'true' })
  const answered = (over: object) => ({ status: 200, dateMs: Date.parse('2026-11-26T12:00:00Z'), body: { newNonce: 'n', newAccount: 'a', newOrder: 'o' }, askedAt: Date.parse('2026-11-26T12:00:00Z'), answeredAt: Date.parse('2026-11-26T12:00:00.200Z'), ...over })

  it('FAILs a directory URL that answers something other than an ACME directory', () => {
    expect(checkAcme(acme, answered({})).status).toBe('PASS')
    expect(checkAcme(acme, answered({ body: { hello: 'world' } }))).toMatchObject({ status: 'FAIL', detail: expect.stringContaining('not an ACME directory') })
    expect(checkAcme(acme, answered({ status: 404, body: null })).status).toBe('FAIL')
  })

  it('PASSes a clock within 5 s of the CA, WARNs up to 30 s, FAILs beyond; behind and ahead alike', () => {
    const at = (seconds: number) => checkClock(acme, answered({ dateMs: Date.parse('2026-11-26T12:00:00Z') - seconds * 1000 }))
    expect(at(3).status).toBe('PASS')
    expect(at(-12)).toMatchObject({ status: 'WARN', detail: "11.9 s behind ca.example.net's clock: more than 5 s" })
    expect(at(45)).toMatchObject({ status: 'FAIL', detail: "45.1 s ahead of ca.example.net's clock: more than 30 s" })
    expect(checkClock(acme, answered({ dateMs: null })).status).toBe('WARN')
  })

  it("FAILs the sites' disks without the host's tools (naming them and the package) or without loop devices, PASSes with both", () => {
    const missing = checkSiteDisks(box({ missingCommands: (names) => names.filter((n) => n === 'mkfs.ext4' || n === 'resize2fs') }))
    expect(missing).toMatchObject({ status: 'FAIL', detail: expect.stringContaining('mkfs.ext4, resize2fs'), fix: expect.stringContaining('e2fsprogs') })
    expect(checkSiteDisks(box({ loopDevices: () => false }))).toMatchObject({ status: 'FAIL', fix: expect.stringContaining('modprobe loop') })
    expect(checkSiteDisks(box())).toMatchObject({ status: 'PASS' })
    // This machine: the real probe finds every tool (e2fsprogs and util-linux are essential on Debian).
    expect(boxProbes(config()).missingCommands(DISK_COMMANDS)).toEqual([])
  })

  it('FAILs a check whose probe throws unexpectedly, and runs the others', async () => {
    const results = await runChecks(config(), box({ diskSpace: () => { throw new Error('statfs: EIO') } }))
    expect(results.find((r) => r.name === 'disk')).toMatchObject({ status: 'FAIL', detail: 'the check itself failed: statfs: EIO' })
    expect(results.find((r) => r.name === 'engine')?.status).toBe('PASS')
  })
})

describe('berth doctor on the delegation (the states the e2e test cannot make)', () => {
  const delegated = config({ BERTH_SITES_DOMAIN: 'hosting.example.net', BERTH_DNS_LISTEN: '0.0.0.0:53', BERTH_DNS_PUBLIC_IPV4: '203.0.113.10', BERTH_DNS_PUBLIC_IPV6: '2001:db8:0::10' })
  const ns = ['ns1.hosting.example.net.', 'NS2.hosting.example.net']

  it('PASSes glue given in another spelling of the same IPv6 address', async () => {
    const res = await checkDelegation(delegated, box({ resolveNs: async () => ns, resolveAddresses: async () => ['203.0.113.10', '2001:db8::10'] }))
    expect(res.status).toBe('PASS')
  })

  it('FAILs a domain without NS (not delegated), and glue without the IPv6 address', async () => {
    expect(await checkDelegation(delegated, box({ resolveNs: async () => [] }))).toMatchObject({ status: 'FAIL', detail: expect.stringContaining('it is not delegated') })
    const res = await checkDelegation(delegated, box({ resolveNs: async () => ns, resolveAddresses: async () => ['203.0.113.10'] }))
    expect(res).toMatchObject({ status: 'FAIL', detail: "ns1.hosting.example.net answers 203.0.113.10, not this box's 2001:db8:0::10 (dns.public_ipv4/ipv6)" })
  })

  it('WARNs when it cannot ask, or when Berth serves no DNS', async () => {
    expect((await checkDelegation(delegated, box({ resolveNs: async () => { throw new Error('the system resolver did not answer (ETIMEOUT)') } }))).status).toBe('WARN')
    expect((await checkDelegation(config({ BERTH_SITES_DOMAIN: 'hosting.example.net', BERTH_DNS_LISTEN: 'off' }), box())).status).toBe('WARN')
  })
})
