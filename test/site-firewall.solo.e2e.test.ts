import { spawn, spawnSync, type Subprocess } from 'bun'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { networkInterfaces, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BINARY, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { ANSWERED, freePool, probeFromSite, REFUSED_BY_FIREWALL, REFUSED_SMTP, rulesOfPool } from './helpers/site-firewall'
import { docker, instanceOf, removeInstanceSites, siteShell } from './helpers/sites'

/**
 * Issue 23, part 3: a site's container cannot reach the host (Berth's API on its bridge gateway,
 * anything else listening on any of the host's addresses) nor link-local addresses (the cloud
 * metadata service), while DNS, the rest of the world and the public edge still work, and the edge
 * still serves the site. Berth puts the rules back at start when someone removed them.
 *
 * It runs in the solo tier, alone: it takes the engine's jump into DOCKER-USER away for a moment
 * (as an engine before Docker 28 does at each network it makes), which would leave other tests'
 * sites without it meanwhile.
 *
 * Everything here is this test's own, so that other suites on the shared machine are not
 * touched: the subnet pool (the rules match it alone, and are removed after), a network namespace
 * standing for the world beyond the host (at 198.18.x.2, an address of the benchmarking range) with
 * a link-local address behind it (169.254.x.2, standing for 169.254.169.254, which the cloud
 * routes to another machine as the host routes this one), and a link-local address on the host
 * itself (169.254.x.9, on the host's end of the namespace's link).
 *
 * Issue 38, item 5: the same namespace's world listens on the mail ports too (25, 465, 587: an
 * HTTP server stands for each, the probe speaks HTTP): a site is refused 25 at once (a TCP reset)
 * and reaches 465 and 587, unless containers.outbound_smtp opens 25.
 */
const r = 1 + Math.floor(Math.random() * 250)
const tag = Math.random().toString(36).slice(2, 6)
const NS = `berthfw-${tag}`
const HOST_LINK = `bfw${tag}h`
const NS_LINK = `bfw${tag}n`
const WORLD = { host: `198.18.${r}.1`, far: `198.18.${r}.2` }
const METADATA = `169.254.${r}.2`
const HOST_LINK_LOCAL = `169.254.${r}.9`
const SECRET = `instance-credentials-${tag}`

let pool: string
let publicAddress: string
let berth: Berth
let slug: string
let key: string
let gateway: string
let hostService: ReturnType<typeof Bun.serve>
let hostPort: number
let worldServer: Subprocess | undefined
/** The world's mail ports: SMTP between servers, then submission (implicit TLS, STARTTLS). */
const SMTP = 25
const SUBMISSION = [465, 587]
let mailServers: Subprocess[] = []
/** containers.outbound_smtp, as berth serve and berth firewall get it. */
let outboundSmtp = 'false'
/** The environment berth serve was started with: a restart reads it again (startBerth). */
let serveEnv: Record<string, string>
const env = () => ({
  BERTH_CONTAINERS_FIREWALL: 'true',
  BERTH_CONTAINERS_OUTBOUND_SMTP: outboundSmtp,
  BERTH_CONTAINERS_SUBNET_POOL: pool,
  // The host's own address stands for its public one: sites may reach the edge there, nothing else.
  BERTH_DNS_PUBLIC_IPV4: publicAddress,
  // Berth checks the rules at every reconcile pass too; none comes while a test removed them.
  BERTH_CONTAINERS_RECONCILE_SECONDS: '3600',
})

/** Runs a command on the host; throws with its output when it fails. */
function sh(...argv: string[]): string {
  const p = spawnSync(argv, { stdout: 'pipe', stderr: 'pipe' })
  if (p.exitCode !== 0) throw new Error(`${argv.join(' ')}: ${p.stderr.toString()}`)
  return p.stdout.toString()
}

/** Runs `berth <args>` with this test's config (the listener's port is in the rules); exit code and output. */
function berthCli(...args: string[]) {
  const config = { ...env(), BERTH_SERVER_LISTEN: `0.0.0.0:${berth.port}` }
  const p = spawnSync([BINARY, ...args], { env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', ...config }, stdout: 'pipe', stderr: 'pipe' })
  return { code: p.exitCode, out: p.stdout.toString() + p.stderr.toString() }
}

/** This test's rules, as `iptables -S` prints them. */
const ourRules = () => rulesOfPool(pool)

/** From inside the site's container: the answer from `address:port`, or nc's error. */
const probe = (address: string, port: number, host = 'probe') => probeFromSite(berth, slug, address, port, host)

/** Every door from the site to the host and link-local addresses, each with what a refusal looks like. */
const doors = () => [
  { what: "Berth's API on the bridge gateway", address: gateway, port: berth.port },
  { what: 'another service on the bridge gateway', address: gateway, port: hostPort },
  { what: "another service on the host's other address", address: publicAddress, port: hostPort },
  { what: 'a link-local address on the host', address: HOST_LINK_LOCAL, port: hostPort },
  { what: 'a link-local address beyond the host (the metadata service)', address: METADATA, port: 8000 },
]

/** Waits until Berth's log, from `from` on, has a line matching `pattern` (the firewall is kept in the background). */
async function untilLogged(b: Berth, pattern: RegExp, from = 0) {
  const deadline = Date.now() + 10_000
  while (!pattern.test(b.output().slice(from))) {
    if (Date.now() > deadline) throw new Error(`not logged: ${pattern}\n${b.output().slice(from)}`)
    await Bun.sleep(50)
  }
}

/** Restarts Berth and waits for its firewall line; returns that line. */
async function restartUntilLogged(pattern: RegExp) {
  const from = berth.output().length
  await berth.restart()
  await untilLogged(berth, pattern, from)
  return berth.output().slice(from).split('\n').find((l) => pattern.test(l))!
}

/**
 * Every door refused at once: the rules reject with ICMP administratively prohibited, which nc
 * reports as "No route to host" (a dropped packet would time out instead, a listener answer).
 */
async function expectAllRefused() {
  for (const door of doors()) {
    const output = await probe(door.address, door.port)
    expect({ door: door.what, output }).toEqual({ door: door.what, output: expect.stringMatching(REFUSED_BY_FIREWALL) })
    expect(output).not.toContain(SECRET)
  }
}

beforeAll(async () => {
  pool = await freePool(docker)
  publicAddress = Object.entries(networkInterfaces())
    .filter(([name]) => !/^(lo|docker|br-|veth|bfw)/.test(name))
    .flatMap(([, addrs]) => addrs ?? [])
    .find((a) => a.family === 'IPv4' && !a.internal)!.address
  hostService = Bun.serve({ hostname: '0.0.0.0', port: 0, fetch: () => new Response(`host-only ${SECRET}`) })
  hostPort = hostService.port!

  // The world beyond the host, and a metadata service behind it at a link-local address.
  sh('ip', 'netns', 'add', NS)
  sh('ip', 'link', 'add', HOST_LINK, 'type', 'veth', 'peer', 'name', NS_LINK)
  sh('ip', 'link', 'set', NS_LINK, 'netns', NS)
  sh('ip', 'addr', 'add', `${WORLD.host}/30`, 'dev', HOST_LINK)
  sh('ip', 'addr', 'add', `${HOST_LINK_LOCAL}/32`, 'dev', HOST_LINK)
  sh('ip', 'link', 'set', HOST_LINK, 'up')
  for (const cmd of [['addr', 'add', `${WORLD.far}/30`, 'dev', NS_LINK], ['addr', 'add', `${METADATA}/32`, 'dev', NS_LINK], ['link', 'set', NS_LINK, 'up'], ['link', 'set', 'lo', 'up'], ['route', 'add', 'default', 'via', WORLD.host]]) {
    sh('ip', 'netns', 'exec', NS, 'ip', ...cmd)
  }
  sh('ip', 'route', 'add', `${METADATA}/32`, 'via', WORLD.far)
  const www = mkdtempSync(join(tmpdir(), 'berth-fw-world-'))
  writeFileSync(join(www, 'index.html'), `the world ${SECRET}\n`)
  worldServer = spawn(['ip', 'netns', 'exec', NS, 'busybox', 'httpd', '-f', '-p', '8000', '-h', www], { stdout: 'ignore', stderr: 'ignore' })
  mailServers = [SMTP, ...SUBMISSION].map((port) => spawn(['ip', 'netns', 'exec', NS, 'busybox', 'httpd', '-f', '-p', String(port), '-h', www], { stdout: 'ignore', stderr: 'ignore' }))

  serveEnv = env()
  berth = await startBerth({ listenHost: '0.0.0.0', env: serveEnv })
  instanceOf(berth)
  slug = uniqueSlug('fw')
  const { data } = await buyDirect(berth.url, { slug })
  key = data.api_key
  expect(await waitForSite(berth.url, key, slug)).toBe('active')
  const [container] = await docker.listContainers({ filters: { label: [`dev.berth.instance=${instanceOf(berth)}`, `dev.berth.site-slug=${slug}`] } })
  const network = Object.values((await docker.getContainer(container!.Id).inspect()).NetworkSettings.Networks)[0]!
  gateway = network.Gateway
  expect(network.IPAddress.startsWith(pool.replace('0/24', ''))).toBe(true)
}, 120_000)

afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
  // The rules this test made, by the command the docs give; then nothing of its pool may remain.
  if (pool && berth) berthCli('firewall', 'remove')
  worldServer?.kill()
  mailServers.forEach((p) => p.kill())
  hostService?.stop(true)
  spawnSync(['ip', 'route', 'del', `${METADATA}/32`])
  spawnSync(['ip', 'link', 'del', HOST_LINK])
  spawnSync(['ip', 'netns', 'del', NS])
  if (pool) expect(ourRules()).toEqual([])
}, 60_000)

describe('the site firewall', () => {
  it('was installed at start: one copy of each rule, logged', async () => {
    await untilLogged(berth, /"msg":"installed the site firewall"/)
    expect(ourRules()).toHaveLength(11)
    expect(berthCli('firewall', 'check')).toEqual({ code: 0, out: `in place (iptables, pool ${pool}, outbound SMTP (TCP 25) refused)\n` })
  })

  it('refuses, at once, every connection from a site to the host and to link-local addresses', async () => {
    await expectAllRefused()
  })

  it('lets DNS, the world beyond the host and the public edge through, and the edge serves the site', async () => {
    const dns = await siteShell(berth, slug, 'nslookup deb.debian.org 2>&1')
    expect(dns.output).toMatch(/Name:\s+deb\.debian\.org[\s\S]*Address/)
    expect(await probe(WORLD.far, 8000)).toContain(`the world ${SECRET}`)
    // The site's own public URL (WordPress asks itself so): the edge port on the public address.
    const own = await probe(publicAddress, berth.port, `${slug}.localhost:${berth.port}`)
    expect(own).toMatch(/^HTTP\/1\.[01] 200/)
    expect((await viaEdge(berth.url, slug)).status).toBe(200)
  })

  it('was what kept them out: without the rules the same doors open', async () => {
    expect(berthCli('firewall', 'remove').out).toContain(`removed the site firewall of ${pool}`)
    expect(ourRules()).toEqual([])
    expect(berthCli('firewall', 'check').code).toBe(1)
    for (const door of doors()) {
      const output = await probe(door.address, door.port)
      expect({ door: door.what, output }).toEqual({ door: door.what, output: expect.stringMatching(ANSWERED) })
    }
    // Outbound SMTP too: the listener on 25 is there, only the rule refused it.
    expect(await probe(WORLD.far, SMTP)).toContain(`the world ${SECRET}`)
  })

  it('is put back when Berth starts again: all of it, or the one jump deleted by hand', async () => {
    await restartUntilLogged(/"msg":"installed the site firewall"/)
    await expectAllRefused()

    const jump = sh('iptables', '-S', 'INPUT').split('\n').find((l) => l.includes(`berth:${pool}:`))!
    sh('sh', '-c', `iptables ${jump.replace(/^-A /, '-D ')}`)
    expect(ourRules()).toHaveLength(10)
    expect(await probe(gateway, hostPort)).toContain(SECRET)
    expect(await restartUntilLogged(/"msg":"restored the site firewall"/)).toContain('"problems":["no jump from INPUT"]')
    expect(ourRules()).toHaveLength(11)
    await expectAllRefused()
    // Again: nothing to do, nothing duplicated.
    await restartUntilLogged(/"msg":"the site firewall is in place"/)
    expect(ourRules()).toHaveLength(11)
  }, 60_000)

  it('holds while the engine has no jump into DOCKER-USER (Docker before 28, at each network it makes), and its backstop goes back on top when Berth makes one', async () => {
    // What the engine does for a moment at each network it makes: FORWARD without the jump.
    const jumps = () => sh('iptables', '-S', 'FORWARD').split('\n').filter((l) => l === '-A FORWARD -j DOCKER-USER').length
    const removed = jumps()
    for (let i = 0; i < removed; i++) sh('iptables', '-D', 'FORWARD', '-j', 'DOCKER-USER')
    try {
      expect(jumps()).toBe(0)
      const output = await probe(METADATA, 8000)
      expect({ output }).toEqual({ output: expect.stringMatching(REFUSED_BY_FIREWALL) })
    } finally {
      for (let i = 0; i < removed; i++) sh('iptables', '-I', 'FORWARD', '-j', 'DOCKER-USER')
    }
    // A new site: the engine puts its network's rules on top of FORWARD, Berth its backstop back above them.
    const other = uniqueSlug('fw')
    const bought = await buyDirect(berth.url, { slug: other })
    expect(await waitForSite(berth.url, bought.data.api_key, other)).toBe('active')
    const forward = sh('iptables', '-S', 'FORWARD').split('\n').filter((l) => l.startsWith('-A FORWARD'))
    const backstop = forward.findIndex((l) => l.includes(`berth:${pool}:`))
    const firstAccept = forward.findIndex((l) => l.endsWith('-j ACCEPT'))
    expect(backstop, forward.join('\n')).toBeGreaterThanOrEqual(0)
    expect(backstop, forward.join('\n')).toBeLessThan(firstAccept)
    expect(berthCli('firewall', 'check').code).toBe(0)
  }, 60_000)

  it('refuses outbound SMTP (TCP 25) at once with a reset, while 465 and 587 reach the same mail host', async () => {
    const started = performance.now()
    const smtp = await probe(WORLD.far, SMTP)
    expect({ smtp }).toEqual({ smtp: expect.stringMatching(REFUSED_SMTP) })
    // At once: the probe holds its input a second; a dropped packet would wait out nc's 4 s.
    expect(performance.now() - started).toBeLessThan(3500)
    for (const port of SUBMISSION) expect({ port, output: await probe(WORLD.far, port) }).toEqual({ port, output: expect.stringContaining(`the world ${SECRET}`) })
  })

  it('reports the SMTP rule like the others: deleted by hand, check says drifted and the port opens; apply puts it back', async () => {
    const rule = ourRules().find((l) => l.includes('--dports 25 ') && l.endsWith('--reject-with tcp-reset'))!
    expect(rule).toMatch(/^-A BERTH-FWD-/)
    sh('sh', '-c', `iptables ${rule.replace(/^-A /, '-D ')}`)
    const check = berthCli('firewall', 'check')
    expect(check.code).toBe(1)
    expect(check.out).toContain(`drifted (iptables, pool ${pool}, outbound SMTP (TCP 25) refused)`)
    expect(check.out).toMatch(/chain BERTH-FWD-\S+ holds other rules than Berth's/)
    expect(await probe(WORLD.far, SMTP)).toContain(`the world ${SECRET}`)
    expect(berthCli('firewall', 'apply').out).toContain('site firewall replaced')
    expect(await probe(WORLD.far, SMTP)).toMatch(REFUSED_SMTP)
    // Whole again (other suites' networks on a shared engine may move the FORWARD backstop meanwhile: that alone is expected).
    expect(ourRules()).toHaveLength(11)
    expect(berthCli('firewall', 'check').out).not.toMatch(/holds other rules|missing|stale|no jump/)
  })

  it('lets outbound SMTP through with containers.outbound_smtp = true, from the next start; and refuses it again without', async () => {
    outboundSmtp = 'true'
    Object.assign(serveEnv, env())
    try {
      // The rule set of another policy: berth serve replaces it at start.
      await restartUntilLogged(/"msg":"restored the site firewall"/)
      expect(ourRules()).toHaveLength(10)
      expect(berthCli('firewall', 'check')).toEqual({ code: 0, out: `in place (iptables, pool ${pool}, outbound SMTP (TCP 25) open)\n` })
      expect(await probe(WORLD.far, SMTP)).toContain(`the world ${SECRET}`)
      // The rest of the firewall holds as before.
      expect(await probe(METADATA, 8000)).toMatch(REFUSED_BY_FIREWALL)
    } finally {
      outboundSmtp = 'false'
      Object.assign(serveEnv, env())
    }
    await restartUntilLogged(/"msg":"restored the site firewall"/)
    expect(ourRules()).toHaveLength(11)
    expect(await probe(WORLD.far, SMTP)).toMatch(REFUSED_SMTP)
  }, 60_000)

  it('never stops Berth from serving: without iptables it warns and serves', async () => {
    const bare = await startBerth({ env: { ...env(), PATH: '/nonexistent' } })
    try {
      const status = await fetch(`${bare.url}/api/v1/status/`)
      expect(status.status).toBe(200)
      await untilLogged(bare, /the site firewall could not be set/)
      expect(bare.output()).toMatch(/"level":"warn","msg":"the site firewall could not be set: sites can reach the host's own addresses.*iptables is not installed/)
    } finally {
      await bare.dispose()
    }
  })
})
