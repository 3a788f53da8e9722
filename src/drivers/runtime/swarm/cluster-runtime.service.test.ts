import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { memoryLogger } from '../../../lib/logger'
import { startLab, type Lab } from '../../../../test/lab-swarm/lab'
import { CONTROL_NODE, type ClusterNode, type NodeLink } from '../../cluster/types'
import { IMAGES } from '../images'
import { LABEL } from '../site-container'
import { HostPortTakenError, SITE_HOME, type SiteEvent, type SiteSpec, type SiteWatch } from '../types'
import { ClusterRuntime } from './cluster-runtime'
import { watchCluster } from './cluster-watch'
import { ensureManager, TASK_HISTORY_LIMIT } from '../swarm-membership'

// A real two-node Swarm (test/lab-swarm): A, the manager, is the control node; B a worker known
// as node 'nb', whose dockerd runs with the daemon-wide no-new-privileges docs/cluster.md asks of
// engines older than API 1.44 (A's does not). The site image is loaded into A only: the runtime carries it to B itself. The
// agent is stood in for by a NodeLink whose engine is B's socket and whose forwards are recorded
// (the agent's own tests cover the forward itself).
const GiB = 1024 ** 3
const instanceId = `t${Math.random().toString(36).slice(2, 8)}`
const log = memoryLogger()
let lab: Lab
let a: Docker
let b: Docker
let runtime: ClusterRuntime
let node: ClusterNode
const forwards: { slug: string; method: string; address?: string }[] = []
const events: SiteEvent[] = []
let watch: SiteWatch
let reconnects = 0
/** Calls of the runtime's onNetworkCreated listener (berth serve's site firewall keeper). */
let networkCalls = 0

function spec(slug: string, over: Partial<SiteSpec> = {}): SiteSpec {
  return { siteId: `id-${slug}`, slug, hostingType: 'shared', image: IMAGES.static, memoryMb: 128, cpuCores: 0.5, pidsLimit: 64, diskGb: 1, sshPort: null, ...over }
}

const link: NodeLink = {
  engineOptions: () => ({ socketPath: lab.b.socket }),
  async fetch(_node, path, init) {
    const slug = decodeURIComponent(path.split('/').pop() ?? '')
    const method = init?.method ?? 'GET'
    if (method === 'PUT') {
      const body = JSON.parse(String(init?.body)) as { address: string }
      forwards.push({ slug, method, address: body.address })
      return Response.json({ port: 41000 + forwards.length })
    }
    forwards.push({ slug, method })
    return new Response(null, { status: 204 })
  },
}

/** The HTTP status of the site's web server, asked from inside the node's network namespace. */
function statusIn(where: 'a' | 'b', address: string): string {
  try {
    return lab.inNode(lab[where], ['curl', '-s', '-m', '2', '-o', '/dev/null', '-w', '%{http_code}', `http://${address}:8080/`])
  } catch {
    return 'none'
  }
}

/** The kernel's swap ceiling for a container on B: memory and swap together (cgroup v1), or `swap N` of swap alone (v2). */
function swapLimitOf(containerId: string): string {
  return lab.docker(lab.b, ['exec', containerId, 'sh', '-c', 'cat /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes 2>/dev/null || echo "swap $(cat /sys/fs/cgroup/memory.swap.max)"'])
}

async function containersOf(engine: Docker, slug: string, running = true) {
  return engine.listContainers({ all: !running, filters: { label: [`${LABEL.instance}=${instanceId}`, `${LABEL.slug}=${slug}`] } })
}

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false> | T | null | undefined | false, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await fn()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(50)
  }
}

beforeAll(async () => {
  lab = await startLab([IMAGES.static, IMAGES.php], { daemonArgs: { b: ['--no-new-privileges'] } })
  a = new Docker({ socketPath: lab.a.socket })
  b = new Docker({ socketPath: lab.b.socket })
  node = { id: 'nb', name: 'b', address: lab.b.address, agentPort: 7710, swarmNodeId: lab.b.swarmNodeId, certFingerprint: 'x', certSerial: '1', state: 'active', memoryBytes: 64 * GiB, cpus: 2, joinedAt: Date.now(), lastSeenAt: null }
  runtime = new ClusterRuntime({ managerSocket: lab.a.socket, instanceId, subnetPool: '10.231.0.0/16', pidsLimit: 128, advertiseAddress: lab.a.address, nodes: () => [node], link, log })
  watch = runtime.watch({ onEvent: (e) => events.push(e), onReconnect: () => reconnects++ })
  runtime.onNetworkCreated(() => networkCalls++)
}, 120_000)

afterAll(async () => {
  console.log(['timings:', ...log.lines.filter((l) => /^timing|image|site task runs/.test(String(l.msg))).map((l) => JSON.stringify(l))].join('\n'))
  watch?.close()
  await lab?.stop()
}, 120_000)

describe('ClusterRuntime on a two-node swarm', () => {
  let containerAddress = ''

  it('keeps few ended tasks per site: the control plane\'s start brings an existing swarm\'s spec to the limit', async () => {
    const history = async () => ((await a.swarmInspect()) as { Spec: { Orchestration: { TaskHistoryRetentionLimit: number } } }).Spec.Orchestration.TaskHistoryRetentionLimit
    // The lab made its swarm with docker swarm init: Swarm's default.
    expect(await history()).toBe(5)
    expect(await ensureManager(lab.a.socket, lab.a.address)).toBe(lab.a.swarmNodeId)
    expect(await history()).toBe(TASK_HISTORY_LIMIT)
    expect(await ensureManager(lab.a.socket, lab.a.address)).toBe(lab.a.swarmNodeId)
  })

  it('runs a new site placed on the node, with the plan limits there, carrying the image to it', async () => {
    expect((await b.listImages()).length).toBe(0)
    // Both lab engines are the same machine: placement would give the control node the tie.
    await runtime.placement.placeOn('wk1', 'nb')
    const started = performance.now()
    const endpoint = await runtime.ensureSite(spec('wk1'))
    const ms = Math.round(performance.now() - started)
    log.info('timing: first site on the worker (image transfer included)', { ms })
    expect(endpoint.address).toBe(lab.b.address)
    const [put] = forwards.filter((f) => f.slug === 'wk1' && f.method === 'PUT')
    expect(endpoint.port).toBe(41000 + forwards.indexOf(put!) + 1)
    containerAddress = put!.address!
    const [container] = await containersOf(b, 'wk1')
    expect(container?.Id).toBe(endpoint.containerId)
    expect(await containersOf(a, 'wk1')).toHaveLength(0)
    expect((await b.getImage(IMAGES.static).inspect()).Id).toBe((await a.getImage(IMAGES.static).inspect()).Id)
    expect(log.lines.filter((l) => l.msg === 'loaded an image on a node').map((l) => l.node)).toEqual(['nb'])
    const info = await b.getContainer(endpoint.containerId).inspect()
    expect(info.HostConfig).toMatchObject({ Memory: 128 * 1024 * 1024, NanoCpus: 5e8, PidsLimit: 64, ReadonlyRootfs: true, CapDrop: ['ALL'], Init: true })
    expect(info.Config.User).toBe('1000:1000')
    // As on one box: no swap beyond the plan's memory, no new privileges, a /tmp nothing runs from.
    expect(info.HostConfig.MemorySwap).toBe(128 * 1024 * 1024)
    expect([String(128 * 1024 * 1024), 'swap 0']).toContain(swapLimitOf(endpoint.containerId))
    const inside = (await runtime.exec('wk1', ['sh', '-c', 'grep NoNewPrivs /proc/1/status; grep " /tmp " /proc/mounts'])).output
    expect(inside).toMatch(/NoNewPrivs:\s+1/)
    expect(inside).toMatch(/^tmpfs \/tmp tmpfs rw,nosuid,nodev,noexec[, ]/m)
    expect(info.NetworkSettings.Networks[`berth-${instanceId}-wk1`]?.IPAddress).toBe(containerAddress)
    await until('an answer from the site', () => statusIn('b', containerAddress) === '200')
    expect(await runtime.placement.nodeOf('wk1')).toBe('nb')
    expect(await runtime.placement.placements()).toEqual(new Map([['wk1', 'nb']]))
    // Running as asked: a second ensure changes nothing.
    expect(await runtime.ensureSite(spec('wk1'))).toEqual(endpoint)
  }, 90_000)

  it('runs commands and terminals in the container on the node, and answers a node path as its home', async () => {
    const result = await runtime.exec('wk1', ['sh', '-c', 'echo hi > $HOME/hello.txt; id -u; cat $HOME/hello.txt'])
    expect(result).toEqual({ exitCode: 0, output: '1000\nhi\n' })
    const run = await runtime.runCommand('wk1', { argv: ['sh', '-c', 'cat; echo oops >&2; exit 3'], cwd: SITE_HOME, env: {}, stdin: new TextEncoder().encode('in'), timeoutMs: 10_000, keepBytes: 1024 })
    expect({ code: run.exitCode, out: new TextDecoder().decode(run.stdout), err: new TextDecoder().decode(run.stderr) }).toEqual({ code: 3, out: 'in', err: 'oops\n' })
    const term = await runtime.openTerminal('wk1', { argv: ['sh'], user: 'site', cwd: SITE_HOME, cols: 91, rows: 17 })
    let seen = ''
    term.onData((bytes) => (seen += new TextDecoder().decode(bytes)))
    term.write('stty size; exit 5\n')
    expect(await term.exited).toBe(5)
    expect(seen).toContain('17 91')
    expect(await runtime.homePath('wk1')).toBe(`node:nb:berth-${instanceId}-wk1-home`)
    const stats = await runtime.stats('wk1')
    expect(stats?.memoryLimitBytes).toBe(128 * 1024 * 1024)
    expect(await runtime.withSitePaused('wk1', async () => (await b.getContainer((await containersOf(b, 'wk1'))[0]!.Id).inspect()).State.Paused)).toBe(true)
    expect(await runtime.inspectSite('wk1')).toMatchObject({ running: true, image: IMAGES.static })
  }, 60_000)

  it('sees a container killed on the worker, and the site serves again from a new container within seconds', async () => {
    const before = (await runtime.inspectSite('wk1'))!
    const from = events.length
    const killedAt = performance.now()
    lab.docker(lab.b, ['kill', before.containerId])
    // As the healer does: at the die, ensure the site again.
    await until('the die event', () => events.slice(from).find((e) => e.action === 'die' && e.containerId === before.containerId))
    const endpoint = await runtime.ensureSite(spec('wk1'))
    expect(endpoint.containerId).not.toBe(before.containerId)
    const latest = forwards.filter((f) => f.slug === 'wk1' && f.method === 'PUT').at(-1)!
    await until('an answer', () => statusIn('b', latest.address!) === '200')
    const ms = Math.round(performance.now() - killedAt)
    log.info('timing: kill on the worker to serving again', { ms })
    // Within seconds, not minutes (the figure is logged; its speed is bench:cluster's, not this test's: a loaded box took 3.4 s).
    expect(ms).toBeLessThan(15_000)
    // Swarm replaced the task (no update of the service), and the start of the new container was reported.
    expect(log.lines.filter((l) => l.msg === 'updated site service')).toHaveLength(0)
    await until('the start of the new container', () => events.slice(from).find((e) => e.action === 'start' && e.containerId === endpoint.containerId))
    const info = await b.getContainer(endpoint.containerId).inspect()
    expect(latest.address).toBe(info.NetworkSettings.Networks[`berth-${instanceId}-wk1`]?.IPAddress)
    expect(info.HostConfig.MemorySwap).toBe(info.HostConfig.Memory)
    expect((await runtime.exec('wk1', ['cat', `${SITE_HOME}/hello.txt`])).output).toBe('hi\n')
  }, 30_000)

  it('keeps the forward on the container Swarm put in place of a killed one', async () => {
    const before = (await runtime.inspectSite('wk1'))!
    const from = events.length
    const puts = forwards.length
    lab.docker(lab.b, ['kill', before.containerId])
    const start = await until('a start of a new container', () => events.slice(from).find((e) => e.action === 'start' && e.slug === 'wk1' && e.containerId !== before.containerId))
    const info = await b.getContainer(start.containerId).inspect()
    // Swarm made this container with no call of Berth's: its swap was taken before its start was reported.
    expect(info.HostConfig.MemorySwap).toBe(128 * 1024 * 1024)
    // The agent is asked again only when the address changed (the /28 often gives the new container the same one).
    const address = info.NetworkSettings.Networks[`berth-${instanceId}-wk1`]?.IPAddress
    expect(forwards.filter((f) => f.slug === 'wk1' && f.method === 'PUT').at(-1)?.address).toBe(address)
    expect(forwards.slice(puts).every((f) => f.address === address)).toBe(true)
    expect(await runtime.ensureSite(spec('wk1'))).toMatchObject({ containerId: start.containerId, address: lab.b.address })
    // Three tasks so far (two killed): Swarm keeps the running one and the last ended one (5 by its default).
    await until('Swarm to prune the ended tasks', async () => (await containersOf(b, 'wk1', false)).length === TASK_HISTORY_LIMIT)
  }, 30_000)

  it('follows the new limits of a plan change, keeping the files', async () => {
    const endpoint = await runtime.ensureSite(spec('wk1', { memoryMb: 256, cpuCores: 1 }))
    const info = await b.getContainer(endpoint.containerId).inspect()
    expect(info.HostConfig).toMatchObject({ Memory: 256 * 1024 * 1024, MemorySwap: 256 * 1024 * 1024, NanoCpus: 1e9 })
    expect((await runtime.exec('wk1', ['cat', `${SITE_HOME}/hello.txt`])).output).toBe('hi\n')
  }, 60_000)

  it('stops, starts again with the files, and removes the site with nothing left', async () => {
    await runtime.stopSite('wk1')
    expect(await containersOf(b, 'wk1')).toHaveLength(0)
    expect((await runtime.inspectSite('wk1'))?.running ?? false).toBe(false)
    await runtime.stopSite('wk1')
    await runtime.ensureSite(spec('wk1', { memoryMb: 256, cpuCores: 1 }))
    expect((await runtime.exec('wk1', ['cat', `${SITE_HOME}/hello.txt`])).output).toBe('hi\n')
    // A database of the site beside it on B (drivers/databases: the site's labels, no `managed`),
    // joined to its network (attachable): never taken for the site's task, and removed with the site.
    const db = await b.createContainer({
      name: `berth-${instanceId}-wk1-db-main`, Image: IMAGES.static, Entrypoint: ['sleep'], Cmd: ['600'],
      Labels: { [LABEL.instance]: instanceId, [LABEL.siteId]: 'id-wk1', [LABEL.slug]: 'wk1', 'dev.berth.role': 'database' },
      HostConfig: { NetworkMode: `berth-${instanceId}-wk1` },
    })
    await db.start()
    expect((await runtime.exec('wk1', ['cat', `${SITE_HOME}/hello.txt`])).output).toBe('hi\n')
    await runtime.removeSite('wk1', { volume: true })
    await runtime.removeSite('wk1', { volume: true })
    const filters = { label: [`${LABEL.instance}=${instanceId}`] }
    expect(await a.listServices({ filters })).toHaveLength(0)
    expect((await a.listNetworks()).filter((n) => n.Name.includes(instanceId))).toHaveLength(0)
    expect((await b.listNetworks()).filter((n) => n.Name.includes(instanceId))).toHaveLength(0)
    expect((await b.listVolumes({ filters })).Volumes ?? []).toHaveLength(0)
    expect(await containersOf(b, 'wk1', false)).toHaveLength(0)
    expect(forwards.at(-1)).toEqual({ slug: 'wk1', method: 'DELETE' })
    expect(await runtime.placement.nodeOf('wk1')).toBeNull()
  }, 90_000)

  it('moves a site with placeOn: it runs on the new node, the old node keeps its volume until removeVolumeOn', async () => {
    await runtime.placement.placeOn('mov', 'nb')
    await runtime.ensureSite(spec('mov'))
    expect(await runtime.placement.nodeOf('mov')).toBe('nb')
    await runtime.placement.placeOn('mov', CONTROL_NODE)
    expect(await containersOf(b, 'mov')).toHaveLength(0)
    // A task started on this box made the site's network here: the site firewall is kept at once
    // (the engine's rules went above its backstop); a task on a node is that node's agent's.
    const calls = networkCalls
    const endpoint = await runtime.ensureSite(spec('mov'))
    expect(networkCalls).toBe(calls + 1)
    expect(await runtime.placement.nodeOf('mov')).toBe(CONTROL_NODE)
    expect((await containersOf(a, 'mov'))[0]?.Id).toBe(endpoint.containerId)
    expect((await a.getContainer(endpoint.containerId).inspect()).HostConfig.MemorySwap).toBe(128 * 1024 * 1024)
    expect(endpoint.address).toMatch(/^10\.231\./)
    await until('an answer from the site', () => statusIn('a', endpoint.address) === '200')
    expect(await runtime.homePath('mov')).toMatch(new RegExp(`/volumes/berth-${instanceId}-mov-home/_data$`))
    const volume = `berth-${instanceId}-mov-home`
    expect((await b.getVolume(volume).inspect()).Name).toBe(volume)
    await runtime.placement.removeVolumeOn('mov', 'nb')
    await expect(b.getVolume(volume).inspect()).rejects.toMatchObject({ statusCode: 404 })
    expect((await runtime.listManaged()).map((c) => c.slug)).toEqual(['mov'])
    await runtime.removeSite('mov', { volume: true })
  }, 90_000)

  it('chooses the active node with the most free memory that fits, never a draining one, believing a node only as far as its engine', async () => {
    const control = (await a.info()).MemTotal as number
    // Both lab engines report this machine's memory: 512 MB placed on the control node leaves B (128 MB placed) the freer.
    await runtime.placement.placeOn('ctl', CONTROL_NODE)
    await runtime.ensureSite(spec('ctl', { memoryMb: 512 }))
    expect(await runtime.placement.nodeOf('ctl')).toBe(CONTROL_NODE)
    node = { ...node, memoryBytes: control + GiB }
    expect(await runtime.placement.choose(128)).toBe('nb')
    expect(await runtime.placement.choose(128, ['nb'])).toBe(CONTROL_NODE)
    node = { ...node, state: 'draining' }
    expect(await runtime.placement.choose(128)).toBe(CONTROL_NODE)
    // Services count against their node: 1 GB more placed on B leaves it less free than the control node,
    // and B's claim of 64 GiB does not pull sites to it: its engine reported this machine's memory.
    node = { ...node, state: 'active', memoryBytes: 64 * GiB }
    await runtime.placement.placeOn('big', 'nb')
    await runtime.ensureSite(spec('big', { memoryMb: 1024 }))
    expect(await runtime.placement.nodeOf('big')).toBe('nb')
    expect(await runtime.placement.choose(128)).toBe(CONTROL_NODE)
    await expect(runtime.placement.choose(1024 * 1024)).rejects.toThrow(/No active node has/)
    await runtime.removeSite('big', { volume: true })
    await runtime.removeSite('ctl', { volume: true })
  }, 90_000)

  it('publishes the SSH port on the node in host mode, moves it when it changes, and says when the node has it taken', async () => {
    await runtime.placement.placeOn('ssh', 'nb')
    const started = performance.now()
    const first = await runtime.ensureSite(spec('ssh', { sshPort: 2299, image: IMAGES.php, hostingType: 'vps' }))
    log.info('timing: first php site on the worker (its image carried there)', { ms: Math.round(performance.now() - started) })
    const ports = async (id: string) => (await b.getContainer(id).inspect()).NetworkSettings.Ports['2222/tcp']?.map((p) => p.HostPort)
    expect(await ports(first.containerId)).toContain('2299')
    // The site's sshd answers on the node's own address, from the control node.
    const banner = () => lab.inNode(lab.a, ['timeout', '3', 'bash', '-c', `exec 3<>/dev/tcp/${lab.b.address}/2299; head -c 7 <&3`])
    expect(await until('the SSH banner', () => { try { return banner() } catch { return null } })).toBe('SSH-2.0')
    const second = await runtime.ensureSite(spec('ssh', { sshPort: 2300, image: IMAGES.php, hostingType: 'vps' }))
    expect(second.containerId).not.toBe(first.containerId)
    expect(await ports(second.containerId)).toContain('2300')
    lab.docker(lab.b, ['run', '-d', '--name', `${instanceId}-squatter`, '-p', '2301:8080', IMAGES.static])
    const refusedFrom = performance.now()
    await expect(runtime.ensureSite(spec('ssh', { sshPort: 2301, image: IMAGES.php, hostingType: 'vps' }))).rejects.toBeInstanceOf(HostPortTakenError)
    expect(performance.now() - refusedFrom).toBeLessThan(15_000)
    lab.docker(lab.b, ['rm', '-f', `${instanceId}-squatter`])
    await runtime.removeSite('ssh', { volume: true })
  }, 90_000)

  it('follows a node that joins after the watch began', async () => {
    const nodes: ClusterNode[] = []
    const seen: SiteEvent[] = []
    const late = watchCluster({ manager: lab.a.socket, instanceId, log, nodes: () => nodes, engineOf: () => ({ socketPath: lab.b.socket }), pollMs: 200 }, { onEvent: (e) => seen.push(e), onReconnect: () => {} })
    try {
      await runtime.placement.placeOn('late', 'nb')
      await runtime.ensureSite(spec('late'))
      await Bun.sleep(500)
      expect(seen.filter((e) => e.slug === 'late')).toEqual([])
      nodes.push(node)
      await Bun.sleep(1000)
      const [container] = await containersOf(b, 'late')
      lab.docker(lab.b, ['kill', container!.Id])
      await until('the die of the late node', () => seen.find((e) => e.slug === 'late' && e.action === 'die' && e.containerId === container!.Id))
    } finally {
      late.close()
      await runtime.removeSite('late', { volume: true })
    }
  }, 60_000)
})

// How long a site on a node is down when Berth restarts it (a restore) or moves it off the node
// (issue 36 item 8): through the service, Swarm reached the container about 3 s after the update
// (the manager's dispatch, then moby's 2 s gossip delay for a task on a network); stopped on its
// node it is gone in well under a second.
describe('a site on a node, restarted or moved away', () => {
  const service = async (slug: string) => {
    const s = await a.getService(`berth-${instanceId}-${slug}`).inspect()
    return `version ${s.Version.Index}, ${s.Spec.Mode.Replicated.Replicas} replica(s)`
  }
  const running = async (slug: string) => (await containersOf(b, slug)).map((c) => c.Id)

  it('stopped for a restart is stopped on its node at once and replaced by Swarm, its service unchanged', async () => {
    await runtime.placement.placeOn('rst', 'nb')
    const first = await runtime.ensureSite(spec('rst'))
    const [old] = await running('rst')
    expect(old).toBe(first.containerId)
    const before = await service('rst')
    const started = performance.now()
    await runtime.stopSite('rst', { forRestart: true })
    const stopMs = performance.now() - started
    expect(await running('rst')).not.toContain(old)
    const again = await runtime.ensureSite(spec('rst'))
    expect(again.containerId).not.toBe(old)
    expect(await running('rst')).toEqual([again.containerId])
    // No update of the service: still one replica, the same version.
    expect(await service('rst')).toBe(before)
    console.log(`restart on the node: stopped in ${Math.round(stopMs)} ms, running again in ${Math.round(performance.now() - started)} ms`)
    expect(stopMs).toBeLessThan(1_500)
  }, 120_000)

  it('placed on another node has its old container stopped well before Swarm would reach it', async () => {
    const [old] = await running('rst')
    expect(old).toBeDefined()
    const started = performance.now()
    await runtime.placement.placeOn('rst', CONTROL_NODE)
    const ms = performance.now() - started
    expect(await running('rst')).toEqual([])
    console.log(`placeOn: the old container stopped in ${Math.round(ms)} ms`)
    expect(ms).toBeLessThan(2_000)
    await runtime.removeSite('rst', { volume: true })
  }, 120_000)
})
