import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ClusterPki, readJoinTls } from '../src/drivers/cluster/pki'
import { api } from './helpers/binary'
import { buyDirect, viaEdge, waitForSite } from './helpers/purchase'
import { startLab, waitFor, type Lab } from './lab/cluster-lab'
import { leftovers } from './lab/lab-host'
import { joinNode, startControlPlane, type ControlPlane, type JoinedNode } from './lab/berth-cluster'

/**
 * The cluster's security (issue 36, items 3 and 4) on the two-node lab (test/lab), with the
 * compiled control plane in A (containers.firewall on) and node B joined with `--port 7810`:
 *
 * - a site on the control plane leaves with the control plane's address, the very address B's
 *   forwards accept: the control plane's site firewall must refuse it at every node address;
 * - a node joined with --port has its own agent ports closed to sites, whatever the address;
 * - berth/php believes X-Forwarded-For from the edge's address only;
 * - `berth node join` talks only to the control plane whose certificate the token's command pins;
 * - (issue 38, item 5) sites on the node and on the control plane are refused outbound SMTP (TCP 25)
 *   at once and reach 465 and 587 of the same host, unless containers.outbound_smtp opens 25.
 */
// BERTH_CLSEC_LAB_NAME runs a second copy beside another worktree's (lab names are exclusive on a machine).
const LAB_NAME = process.env.BERTH_CLSEC_LAB_NAME ?? 'clsec'
/** B's agent port: not cluster.agent_port (7710), as a node joined with --port. */
const B_PORT = 7810
let lab: Lab
let control: ControlPlane
let b: JoinedNode
interface Bought { slug: string; key: string }
let attacker: Bought
let victim: Bought

beforeAll(async () => {
  lab = await startLab(LAB_NAME)
  control = await startControlPlane(lab, { firewall: true })
  b = await joinNode(lab, control, 'B', { port: B_PORT })
  // The first site goes to the control plane, the second (PHP) to B, the freer node.
  attacker = await buy('atk', 'svc_starter_monthly')
  victim = await buy('vic', 'svc_business_monthly')
}, 300_000)

afterAll(async () => {
  await control?.berth.stop().catch(() => {})
  await lab?.stop()
  expect(leftovers(LAB_NAME)).toEqual([])
}, 60_000)

async function buy(stem: string, sku: string): Promise<Bought> {
  const slug = `${stem}${Math.random().toString(36).slice(2, 6)}`
  const key = (await buyDirect(control.url, { slug, sku })).data.api_key as string
  expect(await waitForSite(control.url, key, slug, 150_000)).toBe('active')
  return { slug, key }
}

async function containerOn(node: 'A' | 'B', slug: string): Promise<string> {
  return waitFor(`the container of ${slug} on ${node}`, 60_000, async () => (await lab.docker(node, 'ps', '-q', '--filter', `label=dev.berth.site-slug=${slug}`, '--filter', 'status=running')).split('\n')[0])
}

/** The forward ports B's agent opened (its kernel rules: one DNAT per site's forward). */
async function forwardPorts(): Promise<number[]> {
  const nat = (await lab.exec('B', ['iptables', '-t', 'nat', '-S', 'BERTH-NODE-DNAT'])).stdout
  return [...nat.matchAll(/--dport (\d+)/g)].map((m) => Number(m[1]))
}

/** The victim's access log lines that name `path` (its nginx's, ~/logs/access.log, through the API). */
async function accessLines(path: string): Promise<string[]> {
  const res = await api(control.url, 'GET', `/sites/${victim.slug}/logs/?type=access&search=${encodeURIComponent(path)}`, { key: victim.key })
  expect(res.status, res.text).toBe(200)
  return res.json.data.lines as string[]
}

describe('sites cannot reach other tenants on nodes', () => {
  it('places the sites as the test needs them: one on the control plane, the PHP one on B', async () => {
    const { json } = await control.cli(['nodes', 'list', '--json'])
    const nodes = (json.nodes ?? json) as { id: string; sites: string[] }[]
    expect(nodes.find((n) => n.sites.includes(attacker.slug))?.id).toBe('control')
    expect(nodes.find((n) => n.sites.includes(victim.slug))?.id).toBe(b.id)
  })

  it('gave B at its join a site firewall that knows B (its address blocked, its --port closed): the control plane never had to send another', async () => {
    const policy = JSON.parse(readFileSync(join(b.dataDir, 'node.json'), 'utf8')).firewall
    expect(policy.closedPorts.tcp).toEqual(expect.arrayContaining([B_PORT, B_PORT + 1]))
    expect(policy.blockedHosts).toEqual([lab.address('B')])
    // The health rounds (every 2 s since the join, sites bought meanwhile) found B keeping the control plane's policy.
    expect(b.agent.output()).not.toContain('the control plane gave a new site firewall policy')
    expect(control.berth.output()).not.toContain('gave a node the control plane\'s site firewall policy')
  })

  it('refuses a site on the control plane at every forward port of a node, while the edge serves the site behind it', async () => {
    expect((await viaEdge(control.url, victim.slug)).status).toBe(200)
    const ports = await waitFor('B\'s forwards', 30_000, async () => ((await forwardPorts()).length > 0 ? forwardPorts() : undefined))
    // The control plane's firewall follows the node list: B's address is blocked for its sites.
    await waitFor('B\'s address blocked on the control plane', 15_000, async () =>
      new RegExp(`-A BERTH-FWD-\\S+ -d ${lab.address('B').replaceAll('.', '\\.')}/32 .*-j REJECT`).test((await lab.exec('A', ['iptables', '-S'])).stdout))
    const site = await containerOn('A', attacker.slug)
    const started = performance.now()
    const probe = await lab.docker('A', 'exec', site, 'sh', '-c',
      `for p in ${[...ports, B_PORT, B_PORT + 1].join(' ')}; do printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 ${lab.address('B')} $p; echo "port $p: $?"; done 2>&1`)
    // Refused at once (icmp-admin-prohibited), never answered: before, the forwards answered other tenants' pages.
    expect(probe.match(/No route to host/g), probe).toHaveLength(ports.length + 2)
    expect(probe).not.toMatch(/HTTP\/1\.[01] \d{3}/)
    expect(performance.now() - started).toBeLessThan(5000)
    // The edge still reaches the site through that same forward.
    expect((await viaEdge(control.url, victim.slug)).status).toBe(200)
  })

  it('closes the agent ports of a node joined with --port to every site, at any address', async () => {
    // B's rules carry its own ports (sent by the control plane within seconds of the join).
    await waitFor('B\'s ports closed in B\'s own policy', 15_000, async () => (await lab.exec('B', ['iptables', '-S'])).stdout.includes(`${B_PORT},${B_PORT + 1}`))
    // Another box (the host, on its link with A) listening on B's agent ports and on another:
    // the site on the control plane is refused the first two at once, and reaches the third.
    const accepted: number[] = []
    const listeners = [B_PORT, B_PORT + 1, 0].map((port) => Bun.listen({ hostname: lab.hostSideAddress('A'), port, socket: { open: (s) => { accepted.push(s.localPort); s.end() }, data() {} } }))
    try {
      const other = listeners[2]!.port
      const site = await containerOn('A', attacker.slug)
      const probe = await lab.docker('A', 'exec', site, 'sh', '-c',
        `for p in ${B_PORT} ${B_PORT + 1} ${other}; do nc -w 5 ${lab.hostSideAddress('A')} $p </dev/null; echo "port $p: $?"; done 2>&1`)
      expect(probe.match(/No route to host/g), probe).toHaveLength(2)
      expect(probe).toContain(`port ${other}: 0`)
      expect(accepted).toEqual([other])
    } finally {
      listeners.forEach((l) => l.stop(true))
    }
  })

  it('logs the connection\'s own address, not a forwarded header, from anyone but the edge', async () => {
    const site = await containerOn('B', victim.slug)
    const address = (await lab.docker('B', 'inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', site)).trim()
    // Through the edge: the visitor's own address, whatever it wrote into the header.
    const viaTheEdge = `/via-edge-${Date.now()}`
    // (berth/php answers every path with its index.php: 200.)
    expect((await fetch(`${control.url}${viaTheEdge}`, { headers: { host: `${victim.slug}.localhost:${new URL(control.url).port}`, 'x-forwarded-for': '203.0.113.66' } })).status).toBe(200)
    // From another party on B (its private address, not the site network's gateway), straight to the container.
    const direct = `/direct-${Date.now()}`
    const curl = await lab.exec('B', ['curl', '-sS', '-o', '/dev/null', '-w', '%{http_code}', '--interface', lab.address('B'), '-H', 'X-Forwarded-For: 203.0.113.77', `http://${address}:8080${direct}`])
    expect(curl.stdout).toBe('200')
    const lines = await waitFor('both requests in the access log', 15_000, async () => {
      const [edge, other] = await Promise.all([accessLines(viaTheEdge), accessLines(direct)])
      return edge.length > 0 && other.length > 0 ? { edge: edge.at(-1)!, other: other.at(-1)! } : undefined
    })
    // The edge's header is believed (it comes from the gateway, through B's forward): the visitor's own address.
    expect(lines.edge.split(' ')[0], lines.edge).toBe(lab.hostSideAddress('A'))
    expect(lines.other.split(' ')[0], lines.other).toBe(lab.address('B'))
  })
})

describe('berth firewall on the control plane', () => {
  it('finds the rules berth serve keeps, the nodes\' with them, in place (check), and leaves them so (apply)', async () => {
    const blockedB = new RegExp(`-A BERTH-FWD-\\S+ -d ${lab.address('B').replaceAll('.', '\\.')}/32 .*-j REJECT`)
    await waitFor('B\'s address blocked on the control plane', 15_000, async () => blockedB.test((await lab.exec('A', ['iptables', '-S'])).stdout))
    // The engine put its rules on top of FORWARD as the sites' tasks started on A; berth serve puts
    // its backstop back above them at each such start (was: at its next reconcile pass, 30 s).
    await waitFor('berth serve\'s FORWARD backstop first again', 5_000, async () =>
      /--comment "?berth:/.test((await lab.exec('A', ['iptables', '-S', 'FORWARD'])).stdout.split('\n').find((l) => l.startsWith('-A FORWARD ')) ?? ''))
    const check = await control.cli(['firewall', 'check', '--json'], { allowFailure: true })
    expect(check.code, check.stdout + check.stderr).toBe(0)
    expect(check.json).toMatchObject({ state: 'in_place', problems: [], enabled: true })
    const apply = await control.cli(['firewall', 'apply', '--json'], { allowFailure: true })
    expect(apply.code, apply.stdout + apply.stderr).toBe(0)
    expect(apply.json.action).toBe('already in place')
    // Before, apply put the single box's policy in place: B's address open to the sites until berth serve's next pass.
    expect((await lab.exec('A', ['iptables', '-S'])).stdout).toMatch(blockedB)
  })
})

describe('the node join authenticates the control plane', () => {
  it('refuses a fake control plane answering the join URL: a clear message, nothing sent to it, nothing written on the node', async () => {
    const { token, fingerprint } = await control.joinCommand()
    expect(fingerprint).toBe(`sha256:${readJoinTls(control.dataDir)!.fingerprint}`)
    // Another Berth's join certificate: what an impostor on the private network would show.
    const fakeDir = mkdtempSync(join(tmpdir(), 'berth-fake-control-'))
    const received: string[] = []
    let server: ReturnType<typeof Bun.serve> | undefined
    try {
      await ClusterPki.open(fakeDir)
      const fake = readJoinTls(fakeDir)!
      server = Bun.serve({ hostname: lab.hostSideAddress('B'), port: 0, tls: { cert: fake.cert, key: fake.key }, async fetch(request) {
        received.push(await request.text())
        return Response.json({ nodeId: 'node_fake', certificate: fake.cert, clientCa: fake.cert, swarmToken: 'x', managerAddress: lab.hostSideAddress('B'), controlAddress: lab.hostSideAddress('B'), firewall: null })
      } })
      const data = join(lab.root, 'b', 'fake-join')
      const joined = await lab.exec('B', [control.binary, 'node', 'join', `https://${lab.hostSideAddress('B')}:${server.port}`, '--token', token, '--fingerprint', fingerprint,
        '--address', lab.address('B'), '--name', 'impostor', '--data', data, '--docker-socket', lab.dockerSocket('B'), '--no-systemd'], { allowFailure: true })
      expect(joined.code, joined.stdout).toBe(1)
      expect(joined.stderr).toContain('not the control plane\'s')
      expect(joined.stderr).toContain('Nothing was sent to it')
      expect(received).toEqual([])
      expect((await lab.exec('B', ['ls', data], { allowFailure: true })).code).not.toBe(0)
      // The token was never spent: the real control plane still takes it (checked without joining: its state).
      const { json } = await control.cli(['nodes', 'list', '--json'])
      expect(((json.nodes ?? json) as { name: string }[]).map((n) => n.name)).not.toContain('impostor')
    } finally {
      server?.stop(true)
      rmSync(fakeDir, { recursive: true, force: true })
    }
  })

  it('refuses a join over plain HTTP on the API listener, saying where joins are taken', async () => {
    const res = await fetch(`${control.url}/cluster/v1/join`, { method: 'POST', body: '{}' })
    expect(res.status).toBe(426)
    const body = await res.json() as { error: { code: string; message: string } }
    expect(body.error.code).toBe('join_needs_tls')
    expect(body.error.message).toContain(`https://${lab.address('A')}:7709`)
  })
})

describe('outbound SMTP from sites in a cluster', () => {
  const MAIL_PORTS = [25, 465, 587]
  /** The host (another box, on each node's link) listening on the mail ports; the ports each address accepted. */
  async function withMailHosts<T>(work: (accepted: Record<string, number[]>) => Promise<T>): Promise<T> {
    const accepted: Record<string, number[]> = {}
    const listeners = (['A', 'B'] as const).flatMap((node) => MAIL_PORTS.map((port) => Bun.listen({
      hostname: lab.hostSideAddress(node), port,
      socket: { open: (s) => { (accepted[lab.hostSideAddress(node)] ??= []).push(port); s.end() }, data() {} },
    })))
    try {
      return await work(accepted)
    } finally {
      listeners.forEach((l) => l.stop(true))
    }
  }
  /** From the victim's container on B (berth/php: no nc, bash's /dev/tcp): each mail port's exit status, and the errors. */
  const fromB = async () => lab.docker('B', 'exec', await containerOn('B', victim.slug), 'bash', '-c',
    `for p in ${MAIL_PORTS.join(' ')}; do timeout 5 bash -c "exec 3<>/dev/tcp/${lab.hostSideAddress('B')}/$p"; echo "port $p: $?"; done 2>&1`)
  const resetOnB = async () => /--dports 25 .*-j REJECT --reject-with tcp-reset/.test((await lab.exec('B', ['iptables', '-S'])).stdout)

  it('refuses TCP 25 at once on a node and on the control plane, while 465 and 587 reach the same host', async () => {
    await withMailHosts(async (accepted) => {
      const started = performance.now()
      const onB = await fromB()
      expect(onB).toMatch(/connect: Connection refused\n(.*\n)?port 25: 1\n/)
      expect(onB).toContain('port 465: 0')
      expect(onB).toContain('port 587: 0')
      const onA = await lab.docker('A', 'exec', await containerOn('A', attacker.slug), 'sh', '-c',
        `for p in ${MAIL_PORTS.join(' ')}; do nc -w 5 ${lab.hostSideAddress('A')} $p </dev/null; echo "port $p: $?"; done 2>&1`)
      expect(onA).toMatch(/Connection refused\n(.*\n)?port 25: 1\n/)
      expect(onA).toContain('port 465: 0')
      expect(onA).toContain('port 587: 0')
      // Refused at once (a reset), not dropped: a dropped SYN would wait out the 5 s timeouts.
      expect(performance.now() - started).toBeLessThan(5000)
      expect(accepted[lab.hostSideAddress('B')]).toEqual([465, 587])
      expect(accepted[lab.hostSideAddress('A')]).toEqual([465, 587])
    })
    // B's rule came with the policy of its join.
    expect(await resetOnB()).toBe(true)
  })

  it('opens 25 on the nodes too with containers.outbound_smtp = true: the control plane sends them its policy', async () => {
    const configPath = join(lab.root, 'a', 'berth.toml')
    const config = readFileSync(configPath, 'utf8')
    writeFileSync(configPath, config.replace(/^firewall = true$/m, 'firewall = true\noutbound_smtp = true'))
    try {
      await control.berth.restart()
      await waitFor('B given the policy without the SMTP rule', 20_000, async () => !(await resetOnB()) || undefined)
      await withMailHosts(async (accepted) => {
        const onB = await fromB()
        expect(onB).toContain('port 25: 0')
        expect(accepted[lab.hostSideAddress('B')]).toEqual(MAIL_PORTS)
      })
      expect(b.agent.output()).toContain('the control plane gave a new site firewall policy')
    } finally {
      writeFileSync(configPath, config)
    }
  }, 90_000)
})
