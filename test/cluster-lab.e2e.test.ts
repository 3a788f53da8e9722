import { spawn } from 'bun'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { CONTROL_PORT, startControlPlane } from './lab/berth-cluster'
import { startLab, waitFor, type Lab } from './lab/cluster-lab'
import { leftovers } from './lab/lab-host'

/**
 * The two-node lab the cluster's end-to-end tests and benchmarks run on (test/lab/cluster-lab.ts):
 * a bare Swarm across its two engines runs a site image as Berth will (a dnsrr service on a
 * swarm-scoped bridge network whose subnet is set on the node, pinned to node B), the container
 * answers HTTP inside B, and nothing of the lab is left on the machine after its stop, nor after
 * a run that was killed (the next start's sweep). Prints what the lab costs: the time to start
 * both engines, to join the swarm, to a running service, and each node's memory. Last, the
 * compiled Berth as the control plane in node A (test/lab/berth-cluster.ts) sells and serves a site.
 */
const SITE_PORT = 8080
const SITE_USER = '1000:1000'
let lab: Lab
const figures: Record<string, string> = {}

beforeAll(async () => {
  lab = await startLab('smoke')
  figures.lab = `network ${lab.timings.networkMs.toFixed(0)} ms, both engines ${lab.timings.enginesMs.toFixed(0)} ms, start ${lab.timings.totalMs.toFixed(0)} ms`
  const loading = performance.now()
  await lab.loadImages(['berth/static:1'], 'A', 'B')
  figures.images = `berth/static:1 into both engines in ${(performance.now() - loading).toFixed(0)} ms`
}, 60_000)

afterAll(async () => {
  await lab?.stop()
  console.log(`cluster lab: ${Object.entries(figures).map(([k, v]) => `${k}: ${v}`).join('; ')}`)
})


describe('the two-node lab', () => {
  it('has two engines of their own on a private network, and the host reaches each node', async () => {
    const ids = await Promise.all((['A', 'B'] as const).map((node) => lab.docker(node, 'info', '-f', '{{.ID}}')))
    const machines = (await Bun.$`docker info -f {{.ID}}`.text()).trim()
    expect(new Set([...ids, machines]).size).toBe(3)
    const www = join(lab.root, 'www')
    mkdirSync(www)
    writeFileSync(join(www, 'index.html'), 'lab page\n')
    // B's private address from A, over the lab link; A's host-side address from the test process.
    const inB = lab.spawn('B', ['busybox', 'httpd', '-f', '-p', `${lab.address('B')}:8000`, '-h', www])
    const fromA = await waitFor('httpd in B from A', 5000, async () => (await lab.exec('A', ['curl', '-sS', '--max-time', '1', `http://${lab.address('B')}:8000/`])).stdout)
    expect(fromA).toBe('lab page\n')
    expect((await lab.exec('A', ['ip', 'route', 'get', lab.address('B')])).stdout).toContain(`dev lab src ${lab.address('A')}`)
    const inA = lab.spawn('A', ['busybox', 'httpd', '-f', '-p', `${lab.hostAddress('A')}:8000`, '-h', www])
    const res = await waitFor('httpd in A from the host', 5000, () => fetch(`http://${lab.hostAddress('A')}:8000/`))
    expect(await res.text()).toBe('lab page\n')
    await Promise.all([inA.kill(), inB.kill()])
  })

  it('runs a site image as a dnsrr service on a swarm-scoped bridge network, on B, serving HTTP inside B', async () => {
    const joining = performance.now()
    await lab.swarmInit()
    await lab.swarmJoin('B')
    const bNode = await lab.swarmNodeId('B')
    await waitFor('B ready in the swarm', 20_000, async () => (await lab.docker('A', 'node', 'inspect', '-f', '{{.Status.State}}', bNode)) === 'ready')
    figures.swarm = `init + join + ready in ${(performance.now() - joining).toFixed(0)} ms`

    const creating = performance.now()
    await lab.docker('B', 'network', 'create', '--config-only', '--subnet', '10.231.0.0/28', 'smoke-config')
    await lab.docker('A', 'network', 'create', '-d', 'bridge', '--scope', 'swarm', '--config-from', 'smoke-config', 'smoke-net')
    await lab.docker('A', 'service', 'create', '--detach', '--name', 'smoke', '--endpoint-mode', 'dnsrr', '--network', 'smoke-net',
      '--constraint', `node.id == ${bNode}`, '--restart-condition', 'any', '--no-resolve-image', '--init', '--user', SITE_USER, 'berth/static:1')
    const container = await waitFor('the service\'s container running on B', 30_000, async () =>
      (await lab.docker('B', 'ps', '-q', '--filter', 'label=com.docker.swarm.service.name=smoke', '--filter', 'status=running')).split('\n')[0])
    figures.service = `service created to running on B in ${(performance.now() - creating).toFixed(0)} ms`
    expect(await lab.docker('A', 'ps', '-q')).toBe('')

    const address = await lab.docker('B', 'inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', container)
    expect(address).toMatch(/^10\.231\.0\.([2-9]|1[0-4])$/)
    const token = `served-on-b-${Math.random().toString(36).slice(2)}`
    await lab.docker('B', 'exec', container, 'sh', '-c', `mkdir -p /home/site/public && echo ${token} > /home/site/public/index.html`)
    const served = await lab.exec('B', ['curl', '-sS', '--max-time', '5', `http://${address}:${SITE_PORT}/`])
    expect(served.stdout.trim()).toBe(token)
    // A has no route to B's site networks: site traffic crosses only through what Berth opens.
    const fromA = await lab.exec('A', ['curl', '-sS', '--max-time', '2', `http://${address}:${SITE_PORT}/`], { allowFailure: true })
    expect(fromA.code).not.toBe(0)

    figures.memory = (['A', 'B'] as const).map((node) => `${node} ${(lab.memoryBytes(node) / 2 ** 20).toFixed(0)} MiB`).join(', ')
  })

  it('stops and starts node B\'s engine: cleanly (the service comes back on B), and as a lost box (engine and containers gone at once)', async () => {
    const bNode = await lab.swarmNodeId('B')
    const running = () => lab.docker('B', 'ps', '-q', '--filter', 'label=com.docker.swarm.service.name=smoke', '--filter', 'status=running')
    const before = await running()
    await lab.stopEngine('B', { graceful: true })
    const restartMs = await lab.startEngine('B')
    const back = performance.now()
    // Nominally ~5.5 s (the swarm's restart delay is 5 s); once in a CI run under load it was not
    // back within 30 s: 60 s, and the swarm's own account of the service's tasks if not even then.
    const after = await waitFor('the service running on B again', 60_000, async () => (await running()) || undefined).catch(async (err) => {
      throw new Error(`${(err as Error).message}; the swarm says: ${await lab.docker('A', 'service', 'ps', '--no-trunc', '--format', '{{.Name}} {{.Node}} {{.DesiredState}} {{.CurrentState}} {{.Error}}', 'smoke').catch((e) => (e as Error).message)}`)
    })
    expect(after).not.toBe(before)
    figures.restart = `B's engine answers ${restartMs.toFixed(0)} ms after its start, the service runs there again ${(performance.now() - back).toFixed(0)} ms later`

    // A lost box: nothing of B is left running, its engine, containers and processes. (After this,
    // moby#37087: B, back, rejects every task on the swarm-scoped network it had, "network ... exists".)
    const address = await lab.docker('B', 'inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', after.split('\n')[0]!)
    const listener = lab.spawn('B', ['sleep', '600'])
    await lab.powerOff('B')
    expect(await listener.proc.exited).not.toBe(0)
    await expect(lab.docker('B', 'version')).rejects.toThrow()
    expect(lab.memoryBytes('B')).toBe(0)
    expect((await lab.exec('B', ['curl', '-sS', '--max-time', '2', `http://${address}:${SITE_PORT}/`], { allowFailure: true })).code).not.toBe(0)
    await lab.startEngine('B')
    expect(await lab.swarmNodeId('B')).toBe(bNode)
  }, 120_000)

  it('leaves nothing behind once stopped, and stopping again does nothing', async () => {
    await lab.stop()
    expect(leftovers('smoke')).toEqual([])
    await lab.stop()
    expect(leftovers('smoke')).toEqual([])
  })
})

describe('a lab whose run was killed', () => {
  it('is swept by the next lab that starts', async () => {
    const holder = spawn(['bun', `${import.meta.dirname}/lab/hold-lab.ts`, 'smoke-killed'], { stdout: 'pipe', stderr: 'inherit' })
    const reader = holder.stdout.getReader()
    const first = await reader.read()
    expect(JSON.parse(new TextDecoder().decode(first.value))).toMatchObject({ name: 'smoke-killed' })
    holder.kill('SIGKILL')
    await holder.exited
    const left = leftovers('smoke-killed')
    expect(left).toEqual(expect.arrayContaining(['network namespace berthlab-smoke-killed-a', expect.stringMatching(/^process \d+: dockerd /)]))

    const next = await startLab('smoke-next')
    try {
      expect(leftovers('smoke-killed')).toEqual([])
      expect(await next.docker('B', 'info', '-f', '{{.Containers}}')).toBe('0')
    } finally {
      await next.stop()
    }
    expect(leftovers('smoke-next')).toEqual([])
  }, 60_000)
})

describe('Berth on the lab', () => {
  it('runs the compiled control plane in node A, on A\'s engine, reached from the host, selling and serving a site', async () => {
    const berthLab = await startLab('smoke-berth')
    try {
      const control = await startControlPlane(berthLab, { images: ['berth/static:1'] })
      expect(control.url).toBe(`http://${berthLab.hostAddress('A')}:${CONTROL_PORT}`)
      const slug = uniqueSlug('lab')
      const { data } = await buyDirect(control.url, { slug })
      expect(await waitForSite(control.url, data.api_key, slug)).toBe('active')
      expect(await viaEdge(control.url, slug)).toMatchObject({ status: 200, text: expect.stringContaining('This site is live') })
      // Its container runs on A's engine, not on the machine's.
      expect(await berthLab.docker('A', 'ps', '--format', '{{.Names}}')).toContain(slug)
      expect((await Bun.$`docker ps -a --format {{.Names}}`.text())).not.toContain(slug)
      // B reaches it on A's private address (where nodes join).
      const fromB = await berthLab.exec('B', ['curl', '-sS', '-o', '/dev/null', '-w', '%{http_code}', `${control.joinUrl}/api/v1/status/`])
      expect(fromB.stdout).toBe('200')
    } finally {
      await berthLab.stop()
    }
    expect(leftovers('smoke-berth')).toEqual([])
  }, 60_000)
})
