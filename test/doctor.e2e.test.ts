import { spawn, spawnSync, type Subprocess } from 'bun'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createSocket } from 'node:dgram'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BINARY, freePort, startBerth } from './helpers/binary'
import { ENGINE_SOCKET } from './helpers/engine'
import { startPebble, type Pebble } from './helpers/pebble'

/**
 * `berth doctor --json` of the compiled binary on this machine, with a config of loopback ports and
 * the real engine: what must pass passes, and each planted fault (a port taken, a read-only data
 * folder, a wrong Docker socket, an unknown key, a clock off, a read-only destination) turns its
 * check to FAIL and the exit status to 1.
 */
interface Check { name: string; status: 'PASS' | 'WARN' | 'FAIL'; detail: string; fix: string }

const dir = mkdtempSync(join(tmpdir(), 'berth-doctor-'))
const mounts: string[] = []
let ports: { server: number; tls: number; dns: number }

/** A config of loopback listeners and a fresh data folder, with `extra` TOML sections or keys appended. */
function configFile(extra: Record<string, Record<string, string | number | boolean | string[]>> = {}): string {
  const sections: Record<string, Record<string, unknown>> = {
    server: { listen: `127.0.0.1:${ports.server}`, data_dir: join(dir, 'data') },
    tls: { listen: `127.0.0.1:${ports.tls}` },
    dns: { listen: `127.0.0.1:${ports.dns}` },
    containers: { docker_socket: ENGINE_SOCKET },
  }
  for (const [section, keys] of Object.entries(extra)) sections[section] = { ...sections[section], ...keys }
  const text = Object.entries(sections).map(([s, keys]) => `[${s}]\n${Object.entries(keys).map(([k, v]) => `${k} = ${JSON.stringify(v)}`).join('\n')}`).join('\n\n')
  const file = join(dir, `berth-${Math.random().toString(36).slice(2)}.toml`)
  writeFileSync(file, text + '\n')
  return file
}

/** Runs dist/berth doctor --json; `prefix` runs it through another command (nsenter). */
function doctor(config: string, env: Record<string, string> = {}, prefix: string[] = []) {
  const p = spawnSync([...prefix, BINARY, 'doctor', '--config', config, '--json'], { stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } })
  const checks = JSON.parse(p.stdout.toString()) as Check[]
  const byName = (name: string) => {
    const found = checks.find((c) => c.name === name)
    if (!found) throw new Error(`no check ${name} in ${p.stdout.toString()}`)
    return found
  }
  return { code: p.exitCode, checks, byName, failed: checks.filter((c) => c.status === 'FAIL').map((c) => c.name) }
}

/** A tmpfs of `size` (room is only taken as it is written); read-only by default: root writes through chmod, not through a read-only mount. */
function tmpfsFolder(name: string, { size = '8g', readOnly = true } = {}): string {
  const path = join(dir, name)
  mkdirSync(path, { recursive: true })
  const mounted = spawnSync(['mount', '-t', 'tmpfs', '-o', `${readOnly ? 'ro' : 'rw'},size=${size}`, 'tmpfs', path])
  if (mounted.exitCode !== 0) throw new Error(`mount: ${mounted.stderr.toString()}`)
  mounts.push(path)
  return path
}

beforeAll(async () => {
  ports = { server: await freePort(), tls: await freePort(), dns: await freePort() }
})

afterAll(() => {
  for (const m of mounts) spawnSync(['umount', m])
  rmSync(dir, { recursive: true, force: true })
})

const portName = (port: number, protocol: string) => `port 127.0.0.1:${port}/${protocol}`

describe('berth doctor on this machine', () => {
  it('passes what must pass: config, data folder, engine, images, the four listeners; exit 0 with WARNs only', () => {
    mkdirSync(join(dir, 'data'), { recursive: true })
    const res = doctor(configFile())
    expect(res.failed).toEqual([])
    expect(res.code).toBe(0)
    for (const name of ['config', 'data_dir', 'engine', 'images', portName(ports.server, 'tcp'), portName(ports.tls, 'tcp'), portName(ports.dns, 'tcp'), portName(ports.dns, 'udp')]) {
      expect(res.byName(name).status, name).toBe('PASS')
    }
    expect(res.byName('engine').detail).toMatch(/^Docker \S+ \(API 1\.\d+\)/)
    expect(res.byName('disk').status).not.toBe('FAIL')
    // No CA, a local sites.domain, no unit installed, no destination: WARN, each with its fix.
    for (const name of ['acme', 'clock', 'delegation', 'systemd_unit', 'offsite']) {
      expect(res.byName(name).status, name).toBe('WARN')
      expect(res.byName(name).fix, name).not.toBe('')
    }
  })

  it('FAILs a port taken by another process (TCP and UDP), naming the process; exit 1', async () => {
    const tcp: Server = createServer()
    await new Promise<void>((done) => tcp.listen(ports.server, '127.0.0.1', done))
    const udp = createSocket('udp4')
    await new Promise<void>((done) => udp.bind(ports.dns, '127.0.0.1', done))
    try {
      const res = doctor(configFile())
      expect(res.code).toBe(1)
      expect(res.failed.sort()).toEqual([portName(ports.dns, 'udp'), portName(ports.server, 'tcp')].sort())
      const taken = res.byName(portName(ports.server, 'tcp'))
      expect(taken.detail).toContain(`(pid ${process.pid})`)
      expect(taken.fix).toContain(`sport = :${ports.server}`)
      expect(res.byName(portName(ports.dns, 'udp')).detail).toContain(`(pid ${process.pid})`)
    } finally {
      tcp.close()
      udp.close()
    }
  })

  it('PASSes ports held by a running Berth', async () => {
    const berth = await startBerth({ port: ports.server, env: { BERTH_DNS_LISTEN: `127.0.0.1:${ports.dns}` } })
    try {
      const res = doctor(configFile())
      expect(res.failed).toEqual([])
      for (const name of [portName(ports.server, 'tcp'), portName(ports.dns, 'tcp'), portName(ports.dns, 'udp')]) {
        expect(res.byName(name)).toMatchObject({ status: 'PASS', detail: expect.stringContaining(`held by Berth, berth (pid ${berth.proc.pid})`) })
      }
    } finally {
      await berth.dispose()
    }
  })

  it('FAILs a read-only data folder (a read-only mount, which stops root too)', () => {
    const res = doctor(configFile({ server: { data_dir: tmpfsFolder('ro-data') } }))
    expect(res.code).toBe(1)
    expect(res.failed).toEqual(['data_dir'])
    expect(res.byName('data_dir').detail).toContain('mounted read-only')
  })

  it('FAILs a disk under the reserve (2 GiB by default) and WARNs one under twice it', () => {
    const full = doctor(configFile({ server: { data_dir: tmpfsFolder('small-disk', { size: '512m', readOnly: false }) } }))
    expect(full.failed).toEqual(['disk'])
    expect(full.byName('disk').detail).toMatch(/^512 MiB free of 512 MiB \(100 %\) on the disk of .*: under the reserve of 2\.0 GiB, so berth serve refuses new sites, snapshots and backups \(507\)$/)
    const low = doctor(configFile({ server: { data_dir: tmpfsFolder('low-disk', { size: '3g', readOnly: false }) } }))
    expect(low.code).toBe(0)
    expect(low.byName('disk').status).toBe('WARN')
  })

  it('FAILs a wrong Docker socket: the engine, and the images it cannot be asked for', () => {
    const res = doctor(configFile(), { BERTH_CONTAINERS_DOCKER_SOCKET: join(dir, 'no-docker.sock') })
    expect(res.code).toBe(1)
    expect(res.failed).toEqual(['engine', 'images'])
    expect(res.byName('engine').detail).toContain(join(dir, 'no-docker.sock'))
    expect(res.byName('engine').fix).toContain('containers.docker_socket')
  })

  it('FAILs a missing site image, pointing to berth images build', () => {
    const res = doctor(configFile({ containers: { image_vps: 'berth/doctor-absent:0' } }))
    expect(res.failed).toEqual(['images'])
    expect(res.byName('images')).toMatchObject({ detail: expect.stringContaining('berth/doctor-absent:0'), fix: expect.stringContaining('berth images build') })
  })

  it('FAILs an unknown config key, naming it; exit 1', () => {
    const res = doctor(configFile({ server: { colour: 'blue' } }))
    expect(res.code).toBe(1)
    expect(res.checks).toEqual([expect.objectContaining({ name: 'config', status: 'FAIL', detail: expect.stringContaining('unknown key server.colour') })])
  })

  it('WARNs a BERTH_* variable that names no key (the loader passes over it); exit 0', () => {
    const res = doctor(configFile(), { BERTH_TLS_ACME_DIRCTORY: 'https://ca.example.net/dir' })
    expect(res.byName('config')).toMatchObject({ status: 'WARN', detail: expect.stringContaining('BERTH_TLS_ACME_DIRCTORY names no key Berth reads') })
    expect(res.code).toBe(0)
  })

  it('checks an off-box folder with a test object: PASS when writable, FAIL on a read-only mount', () => {
    const recipients = ['age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p']
    const good = join(dir, 'offsite')
    mkdirSync(good, { recursive: true })
    expect(doctor(configFile({ offsite: { url: `file://${good}`, age_recipients: recipients } })).byName('offsite').status).toBe('PASS')
    const bad = doctor(configFile({ offsite: { url: `file://${tmpfsFolder('ro-offsite')}`, age_recipients: recipients } }))
    expect(bad.failed).toEqual(['offsite'])
    expect(bad.code).toBe(1)
  })

  it('FAILs an S3 destination that does not answer, saying why, within the driver\'s retries', async () => {
    const s3 = { url: 's3://backups/box1', endpoint: `http://127.0.0.1:${await freePort()}`, region: 'us-east-1', access_key_id: 'AKIDOCTOR', secret_access_key: 'doctor-secret', path_style: true, age_recipients: ['age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p'] }
    const res = doctor(configFile({ offsite: s3 }))
    expect(res.failed).toEqual(['offsite'])
    expect(res.byName('offsite').detail).toMatch(/^s3:\/\/backups\/box1 refused a test object: .+/)
    expect(res.byName('offsite').detail).not.toContain('doctor-secret')
  }, 60_000)
})

describe('berth doctor against an ACME server (Pebble)', () => {
  let pebble: Pebble
  beforeAll(async () => {
    pebble = await startPebble({ httpPort: await freePort(), dnsServer: '127.0.0.1:1' })
  }, 60_000)
  afterAll(async () => {
    await pebble?.stop()
  })
  const acme = (extra: Record<string, string | number | boolean> = {}) =>
    ({ tls: { acme_directory: pebble.directoryUrl, acme_email: 'ops@example.com', acme_terms_agreed: true, ca_bundle: pebble.caBundleFile }, ...(Object.keys(extra).length ? { dev: extra } : {}) })

  it('PASSes the directory and a clock in step with it', () => {
    const res = doctor(configFile(acme()))
    expect(res.byName('acme')).toMatchObject({ status: 'PASS' })
    expect(res.byName('clock')).toMatchObject({ status: 'PASS', detail: expect.stringMatching(/within 5 s$/) })
  })

  it('FAILs a clock two minutes off', () => {
    const res = doctor(configFile(acme({ clock_offset_seconds: 120 })))
    expect(res.failed).toEqual(['clock'])
    expect(res.byName('clock').detail).toMatch(/^1[12]\d\.\d s ahead of 127\.0\.0\.1:\d+'s clock/)
  })

  it('FAILs a directory that does not answer', async () => {
    const res = doctor(configFile({ tls: { acme_directory: `https://127.0.0.1:${await freePort()}/dir`, acme_email: 'ops@example.com', acme_terms_agreed: true } }))
    expect(res.failed).toEqual(['acme'])
    expect(res.byName('clock').status).toBe('WARN')
  })
})

/**
 * The delegation through the system resolver, end to end: a network and mount namespace of the
 * test's own, whose /etc/resolv.conf names 127.0.0.1, where a berth serve answers DNS on port 53 as
 * the authority for sites.domain. The doctor runs in the same namespaces (nsenter), so what it
 * asks the "system resolver" is answered by Berth's zone: NS ns1/ns2.{sites.domain}, glue 203.0.113.10.
 */
describe('berth doctor on the delegation of sites.domain', () => {
  const SITES = 'hosting.doctor-check.net'
  let berth: Subprocess
  let log = ''
  let nsenter: string[]
  const delegationConfig = (dns: Record<string, string | string[]> = {}) =>
    configFile({ server: { listen: '127.0.0.1:8080' }, sites: { domain: SITES }, dns: { listen: '127.0.0.1:53', public_ipv4: '203.0.113.10', ...dns } })

  beforeAll(async () => {
    const resolv = join(dir, 'resolv.conf')
    writeFileSync(resolv, 'nameserver 127.0.0.1\n')
    const config = delegationConfig()
    mkdirSync(join(dir, 'data'), { recursive: true })
    berth = spawn(['unshare', '--net', '--mount', '--', 'sh', '-c', `ip link set lo up && mount --bind ${resolv} /etc/resolv.conf && exec ${BINARY} serve --config ${config}`], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', BERTH_CONTAINERS_FIREWALL: 'false' },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    for (const stream of [berth.stdout, berth.stderr] as ReadableStream<Uint8Array>[]) {
      void (async () => {
        const reader = stream.getReader()
        for (let r = await reader.read(); !r.done; r = await reader.read()) log += new TextDecoder().decode(r.value)
      })()
    }
    for (const deadline = Date.now() + 15_000; !log.includes('DNS server listening'); await Bun.sleep(50)) {
      if (Date.now() > deadline || berth.exitCode !== null) throw new Error(`berth serve did not start its DNS server:\n${log}`)
    }
    nsenter = ['nsenter', '--target', String(berth.pid), '--net', '--mount', '--']
  }, 30_000)

  afterAll(async () => {
    berth?.kill('SIGTERM')
    await berth?.exited
  })

  it('PASSes when the NS are dns.nameservers and their glue is dns.public_ipv4', () => {
    const res = doctor(delegationConfig(), {}, nsenter)
    expect(res.byName('delegation')).toMatchObject({ status: 'PASS', detail: `${SITES} is delegated to ns1.${SITES}, ns2.${SITES}, which answer 203.0.113.10` })
    expect(res.byName('port 127.0.0.1:53/udp').detail).toContain('held by Berth')
    expect(res.code, JSON.stringify(res.failed)).toBe(0)
  })

  it('FAILs glue that points elsewhere than dns.public_ipv4', () => {
    const res = doctor(delegationConfig({ public_ipv4: '203.0.113.99' }), {}, nsenter)
    expect(res.failed).toEqual(['delegation'])
    expect(res.byName('delegation').detail).toBe(`ns1.${SITES} answers 203.0.113.10, not this box's 203.0.113.99 (dns.public_ipv4/ipv6)`)
    expect(res.byName('delegation').fix).toContain('glue 203.0.113.99')
  })

  it('FAILs NS that are not dns.nameservers', () => {
    const res = doctor(delegationConfig({ nameservers: ['ns1.elsewhere.net', 'ns2.elsewhere.net'] }), {}, nsenter)
    expect(res.failed).toEqual(['delegation'])
    expect(res.byName('delegation').detail).toBe(`${SITES}'s NS are ns1.${SITES}, ns2.${SITES}; Berth's (dns.nameservers) are ns1.elsewhere.net, ns2.elsewhere.net`)
    expect(res.code).toBe(1)
  })
})
