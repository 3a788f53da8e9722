import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * A two-node Swarm on this machine for the Swarm runtime's tests (issue 28): two private dockerds,
 * each in a network namespace of its own, joined by a veth pair (A 10.251.0.1, B 10.251.0.2),
 * each with its own data root, exec root, pidfile and Unix socket under /tmp/bswl-{run}/. A is
 * the Swarm manager (the control plane's engine), B a worker. The machine's shared engine is never
 * touched: images come into A with `docker save | docker -H A load`.
 *
 * `ip netns exec` would remount /sys for the namespace and lose the cgroup tree dockerd needs; the
 * daemons start under `nsenter --net` + `unshare -m` instead, which mount a fresh sysfs (the
 * namespace's network devices) and move the cgroup tree back over it.
 *
 * Everything is named with PREFIX: `cleanLeftovers()` stops and removes what any earlier run left
 * (a failed or killed one), by its pidfiles and names only; a lab whose test process still runs
 * (its `owner` file) is left alone, so two worktrees can run the lab's tests at the same time.
 * (The integrator may fold this into the lab helper's test/lab.)
 */
export const PREFIX = 'bswl'
const ROOT = '/tmp'
const SUBNET = '10.251.0'

export interface LabNode {
  name: 'a' | 'b'
  netns: string
  socket: string
  address: string
  swarmNodeId: string
  dir: string
}

export interface Lab {
  id: string
  a: LabNode
  b: LabNode
  /** Runs `argv` inside a node's network namespace (reaching its containers' addresses). */
  inNode(node: LabNode, argv: string[]): string
  /** `docker -H {node} ...` */
  docker(node: LabNode, args: string[]): string
  stop(): Promise<void>
}

const run = (cmd: string, args: string[], input?: string): string => execFileSync(cmd, args, { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'] }).trim()
const tryRun = (cmd: string, args: string[]) => {
  try {
    run(cmd, args)
  } catch {}
}

/** Extra dockerd flags per node, e.g. `{ b: ['--no-new-privileges'] }`. */
export interface LabOptions {
  daemonArgs?: Partial<Record<'a' | 'b', string[]>>
}

/** Starts A and B, makes A a Swarm manager and B its worker, and loads `images` into A only. */
export async function startLab(images: string[], opts: LabOptions = {}): Promise<Lab> {
  await cleanLeftovers()
  const id = `${PREFIX}${Math.random().toString(36).slice(2, 6)}`
  const dir = join(ROOT, id)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'owner'), String(process.pid))
  const nodes = (['a', 'b'] as const).map((name, i) => ({ name, netns: `${id}${name}`, dir: join(dir, name), socket: join(dir, name, 'sock'), address: `${SUBNET}.${i + 1}`, swarmNodeId: '' }))
  const [a, b] = nodes as [LabNode, LabNode]
  const stop = () => stopLab(id)
  try {
    run('ip', ['netns', 'add', a.netns])
    run('ip', ['netns', 'add', b.netns])
    run('ip', ['link', 'add', `${id}a`, 'type', 'veth', 'peer', 'name', `${id}b`])
    for (const node of nodes) {
      const dev = `${id}${node.name}`
      run('ip', ['link', 'set', dev, 'netns', node.netns])
      run('ip', ['-n', node.netns, 'addr', 'add', `${node.address}/24`, 'dev', dev])
      run('ip', ['-n', node.netns, 'link', 'set', 'lo', 'up'])
      run('ip', ['-n', node.netns, 'link', 'set', dev, 'up'])
      startDockerd(node, node.name === 'a' ? 1 : 2, opts.daemonArgs?.[node.name] ?? [])
    }
    await Promise.all(nodes.map(untilAnswering))
    const docker = (node: LabNode, args: string[], input?: string) => run('docker', ['-H', `unix://${node.socket}`, ...args], input)
    docker(a, ['swarm', 'init', '--advertise-addr', a.address])
    docker(b, ['swarm', 'join', '--token', docker(a, ['swarm', 'join-token', '-q', 'worker']), `${a.address}:2377`])
    for (const node of nodes) node.swarmNodeId = docker(node, ['info', '--format', '{{.Swarm.NodeID}}'])
    for (const image of images) execFileSync('sh', ['-c', `docker save ${image} | docker -H unix://${a.socket} load -q`], { stdio: 'ignore' })
    return {
      id, a, b,
      inNode: (node, argv) => run('nsenter', [`--net=/run/netns/${node.netns}`, '--', ...argv]),
      docker: (node, args) => docker(node, args),
      stop,
    }
  } catch (err) {
    await stop()
    throw err
  }
}

function startDockerd(node: LabNode, n: number, extra: string[]): void {
  mkdirSync(join(node.dir, 'cg'), { recursive: true })
  const d = node.dir
  const script = [
    `mount --rbind /sys/fs/cgroup ${d}/cg`,
    'mount -t sysfs sysfs /sys',
    `mount --move ${d}/cg /sys/fs/cgroup`,
    `exec dockerd --data-root ${d}/data --exec-root ${d}/x --pidfile ${d}/pid -H unix://${node.socket} --bip 172.31.${n}.1/24 --storage-driver overlay2 --log-level warn ${extra.join(' ')}`,
  ].join(' && ')
  const out = join(d, 'dockerd.log')
  writeFileSync(out, '')
  const child = spawn('nsenter', [`--net=/run/netns/${node.netns}`, '--', 'unshare', '-m', '--propagation', 'private', 'sh', '-c', script], {
    detached: true,
    stdio: ['ignore', 'ignore', 'ignore'],
  })
  child.unref()
}

async function untilAnswering(node: LabNode): Promise<void> {
  const deadline = Date.now() + 30_000
  for (;;) {
    try {
      run('docker', ['-H', `unix://${node.socket}`, 'version', '--format', '{{.Server.Version}}'])
      return
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`the lab's dockerd ${node.name} did not answer: ${readFileSync(join(node.dir, 'dockerd.log'), 'utf8').slice(-2000)}`, { cause: err })
      await Bun.sleep(200)
    }
  }
}

/** Stops one lab's daemons (by their pidfiles) and removes its namespaces and folders. */
export async function stopLab(id: string): Promise<void> {
  const dir = join(ROOT, id)
  const pids: number[] = []
  for (const name of ['a', 'b']) {
    const pidfile = join(dir, name, 'pid')
    if (!existsSync(pidfile)) continue
    const pid = Number(readFileSync(pidfile, 'utf8').trim())
    if (pid > 0 && ownDockerd(pid, dir)) {
      pids.push(pid)
      try {
        process.kill(pid, 'SIGTERM')
      } catch {}
    }
  }
  const deadline = Date.now() + 20_000
  while (pids.some(alive) && Date.now() < deadline) await Bun.sleep(100)
  for (const pid of pids.filter(alive)) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {}
  }
  for (const name of ['a', 'b']) tryRun('ip', ['netns', 'delete', `${id}${name}`])
  tryRun('ip', ['link', 'delete', `${id}a`])
  // The folders beneath the sites' disks are immutable (src/drivers/runtime/disk-script.ts); the
  // disks went with the engines' mount namespaces.
  tryRun('sh', ['-c', 'for d in "$0"/*/data/volumes/*/_data "$0"/*/volumes/*/_data; do [ -d "$d" ] && chattr -i "$d"; done; true', dir])
  rmSync(dir, { recursive: true, force: true })
}

/** Stops and removes every lab an earlier run left (its folders /tmp/bswl*, its namespaces). */
export async function cleanLeftovers(): Promise<void> {
  const ids = new Set<string>()
  for (const entry of readdirSync(ROOT)) if (entry.startsWith(PREFIX)) ids.add(entry)
  for (const ns of tryList(['netns', 'list'])) {
    const name = ns.split(' ')[0] ?? ''
    if (name.startsWith(PREFIX)) ids.add(name.slice(0, -1))
  }
  for (const id of ids) if (!ownedByAnother(id)) await stopLab(id)
}

/** True when the lab's test process (not this one) still runs. */
function ownedByAnother(id: string): boolean {
  try {
    const pid = Number(readFileSync(join(ROOT, id, 'owner'), 'utf8').trim())
    return pid > 0 && pid !== process.pid && alive(pid)
  } catch {
    return false
  }
}

function tryList(args: string[]): string[] {
  try {
    return run('ip', args).split('\n').filter(Boolean)
  } catch {
    return []
  }
}

const alive = (pid: number) => existsSync(`/proc/${pid}`)

/** True when `pid` is a dockerd whose data root is under `dir` (a pidfile can outlive its process). */
function ownDockerd(pid: number, dir: string): boolean {
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
    return cmdline.includes('dockerd') && cmdline.includes(dir)
  } catch {
    return false
  }
}
