import { spawn, type Subprocess } from 'bun'
import { closeSync, copyFileSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { ENGINE_SOCKET } from '../helpers/engine'
import {
  currentOwner, killCgroup, labRoot, makeNetwork, nodeCgroup, nodeNamespace, otherLiveOwner, pidsIn, sitesCgroupParent, sweepLab,
  sweepOrphanLabs, type NodeLetter,
} from './lab-host'

/**
 * A two-node lab on one machine, for the cluster's end-to-end tests and benchmarks (issue 28):
 * two network namespaces A and B, each with a private dockerd of its own (data root, exec root,
 * socket, pidfile and logs under the lab's temporary folder), joined by a veth pair on a private
 * /24, as two boxes on a private network are. The test process stays on the host and reaches each
 * node through a veth of its own:
 *
 *   host 10.252.{n}.1 ── bl{n}a ── A 10.252.{n}.2     A 10.251.{n}.1 ── lab ── B 10.251.{n}.2
 *   host 10.252.{n}.5 ── bl{n}b ── B 10.252.{n}.6
 *
 * plus host routes to each node's private address through its link, so the host also reaches
 * 10.251.{n}.1 and .2 (as another box on the private network would: a connection from the host
 * comes from 10.252.{n}.1 or .5, never from A's private address). `n` (0-255) is the first free
 * one from a hash of the name; the ranges clash with neither containers.subnet_pool (10.231/16)
 * nor any other test's (10.232-10.233, 10.250). Inside the nodes the engines keep their defaults
 * (docker0 172.17/16): the namespaces are apart from the host's.
 *
 * No swarm is made at start: Berth's control plane runs `swarm init` itself on A's engine when
 * cluster.enabled; swarmInit/swarmJoin are for tests that want a bare swarm.
 *
 * Everything is removed by `stop()`, by the exit handlers, and otherwise by the sweep at the next
 * start (of the same name, or of any lab whose owner process is gone): lab-host.ts says what a lab
 * owns and how it is found. Names must be unique among the labs that run at once (one per test
 * file); a start refuses a name whose owner still runs (the same test run from another worktree).
 *
 * @example
 *   const lab = await startLab('smoke')
 *   await lab.loadImages(['berth/static:1'], 'A', 'B')
 *   await lab.exec('B', ['curl', '-s', 'http://10.231.0.2:8080/'])
 *   await lab.stop()
 */

export type LabNode = 'A' | 'B'
const NODES: LabNode[] = ['A', 'B']
const IN_NODE = resolve(import.meta.dirname, 'in-node.sh')
const NAME = /^[a-z0-9][a-z0-9-]{0,19}$/
const ENGINE_WAIT_MS = 30_000

export interface ExecResult {
  code: number
  stdout: string
  stderr: string
}

export interface ExecOptions {
  /** Added to the test process's environment (less its BERTH_* variables). */
  env?: Record<string, string>
  /** Written to the command's standard input. */
  input?: string
  /** Kills the command (SIGKILL) after this long; default 60 s. */
  timeoutMs?: number
  /** Resolve with a non-zero exit code instead of throwing. */
  allowFailure?: boolean
}

/** A long-running process in a node (lab.spawn). */
export interface LabProcess {
  proc: Subprocess
  /** Its stdout and stderr so far. */
  output(): string
  /** Sends `signal` (SIGTERM) and waits for its exit. */
  kill(signal?: NodeJS.Signals): Promise<void>
}

export interface LabTimings {
  /** Namespaces, links, addresses and routes. */
  networkMs: number
  /** Both dockerds, started at once, until each answers /_ping. */
  enginesMs: number
  totalMs: number
}

export interface Lab {
  name: string
  /** The lab's temporary folder (engines' data roots, sockets, logs). */
  root: string
  /** The private /24 joining the nodes, e.g. 10.251.7.0/24. */
  subnet: string
  timings: LabTimings
  /** A node's address on the private network (10.251.{n}.1 for A, .2 for B); the host reaches it too. */
  address(node: LabNode): string
  /** A node's address on its link with the host: where the test process reaches listeners in it. */
  hostAddress(node?: LabNode): string
  /** The host's own address on its link with a node: what the node sees connections from the test process come from. */
  hostSideAddress(node?: LabNode): string
  /** The unix socket of a node's dockerd (reachable from the host). */
  dockerSocket(node: LabNode): string
  /** The argv that runs `argv` inside a node, for callers that spawn it themselves (its processes are killed at stop, as lab.spawn's). */
  command(node: LabNode, argv: string[]): string[]
  /** Runs a command inside a node (its network, a fresh /sys) and waits for it. */
  exec(node: LabNode, argv: string[], opts?: ExecOptions): Promise<ExecResult>
  /** Starts a long-running command inside a node; it is killed at stop, or with its node's processes. */
  spawn(node: LabNode, argv: string[], env?: Record<string, string>): LabProcess
  /** `docker -H {node's socket} ARGS` from the host; its trimmed stdout. Throws on failure. */
  docker(node: LabNode, ...args: string[]): Promise<string>
  /** Copies images from the machine's engine into the nodes' (one `docker save`, streamed to each `docker load`). */
  loadImages(images: string[], ...nodes: LabNode[]): Promise<void>
  /** `docker swarm init` on A's engine, advertising A's private address; returns the worker join token. */
  swarmInit(): Promise<string>
  /** `docker swarm join` of a node's engine (B by default) to A's swarm (swarmInit first). */
  swarmJoin(node?: LabNode): Promise<void>
  /** The node's id in the swarm (`docker info` .Swarm.NodeID), '' outside one. */
  swarmNodeId(node: LabNode): Promise<string>
  /**
   * Stops a node's engine. By default as a lost box: SIGKILL to dockerd, containerd, the shims and
   * every container at once (lab.spawn processes live on; kill them too for a whole box). With
   * `graceful`, SIGTERM to dockerd, as `systemctl stop docker`, and what it leaves is killed then.
   */
  stopEngine(node: LabNode, opts?: { graceful?: boolean }): Promise<void>
  /** A box powered off: stopEngine(node) and SIGKILL to every lab.exec/spawn process in it (its agent). */
  powerOff(node: LabNode): Promise<void>
  /** Starts a node's engine again (same data root: its containers and swarm state come back); resolves once it answers, with the time it took in ms. */
  startEngine(node: LabNode): Promise<number>
  /** Resident memory (bytes) of a node's engine: dockerd, containerd, shims and its containers (not lab.spawn processes). */
  memoryBytes(node: LabNode): number
  /** Kills everything the lab started and removes its namespaces, links, cgroups and folder. Idempotent. */
  stop(): Promise<void>
}

/** The lab letter of a node. */
function letter(node: LabNode): NodeLetter {
  return node === 'A' ? 'a' : 'b'
}

/** Reads a process's stdout and stderr into a growing string. */
function collectOutput(proc: Subprocess<'ignore' | 'pipe', 'pipe', 'pipe'>): () => string {
  let log = ''
  for (const stream of [proc.stdout, proc.stderr]) {
    void (async () => {
      const reader = stream.getReader()
      const decoder = new TextDecoder()
      for (let r = await reader.read(); !r.done; r = await reader.read()) log += decoder.decode(r.value, { stream: true })
    })()
  }
  return () => log
}

/** Waits until a dockerd answers /_ping on its socket; throws with its log's tail after ENGINE_WAIT_MS or when it exits. */
async function waitForEngine(socket: string, proc: Subprocess, logPath: string): Promise<void> {
  const deadline = Date.now() + ENGINE_WAIT_MS
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) break
    try {
      const res = await fetch('http://engine/_ping', { unix: socket })
      if (res.ok) return
    } catch {
      // not listening yet
    }
    await Bun.sleep(25)
  }
  let log = ''
  try {
    log = readFileSync(logPath, 'utf8').split('\n').slice(-20).join('\n')
  } catch {
    // no log
  }
  throw new Error(`the lab's dockerd on ${socket} did not answer (exit ${proc.exitCode}):\n${log}`)
}

/**
 * The environment of a process in a node: the test process's, less its BERTH_* variables (a node
 * is another box: Berth there reads its own config, not the test run's engine socket), plus `env`.
 */
function nodeEnv(env: Record<string, string> = {}): Record<string, string | undefined> {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('BERTH_')))
  return { ...inherited, ...env }
}

/** With BERTH_LAB_LOGS=DIR, the engines' logs are copied to DIR/{name}-{a,b}-dockerd.log at stop (the lab's folder goes). */
function keepLogs(name: string, root: string): void {
  const dir = process.env.BERTH_LAB_LOGS
  if (!dir) return
  mkdirSync(dir, { recursive: true })
  for (const node of ['a', 'b']) {
    try {
      copyFileSync(join(root, node, 'dockerd.log'), join(dir, `${name}-${node}-dockerd.log`))
    } catch {
      // no log
    }
  }
}

/** Every lab this process started and has not stopped: stopped by the exit handlers. */
const running = new Set<() => void>()
let handlersInstalled = false

/** On exit, SIGINT, SIGTERM and SIGHUP: stop every lab of this process, then die of the signal as before. */
function installExitHandlers(): void {
  if (handlersInstalled) return
  handlersInstalled = true
  const stopAll = () => {
    for (const stop of [...running]) {
      try {
        stop()
      } catch {
        // the next start's sweep finishes it
      }
    }
  }
  process.once('exit', stopAll)
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      stopAll()
      process.kill(process.pid, signal)
    })
  }
}

/**
 * Starts the lab `name` (lowercase letters, digits, dashes; up to 20): sweeps what an earlier run
 * of that name (or any lab whose owner died) left, makes the network, starts both engines at once.
 * About a second here (see timings).
 */
export async function startLab(name: string): Promise<Lab> {
  if (!NAME.test(name)) throw new Error(`lab name ${JSON.stringify(name)}: lowercase letters, digits and dashes, up to 20`)
  const t0 = performance.now()
  // The machine is shared: another run of the same test (another worktree) may hold this name.
  const other = otherLiveOwner(name)
  if (other) throw new Error(`lab ${name} is in use by process ${other.pid} (another run of this test?): wait for it, or stop it`)
  sweepLab(name)
  sweepOrphanLabs()
  const root = labRoot(name)
  // The folder appears with its lab.json (renamed into place), so a sweep never takes a starting lab for an orphan.
  const staging = `${root}.new-${process.pid}`
  mkdirSync(staging, { recursive: true })
  writeFileSync(join(staging, 'lab.json'), JSON.stringify({ name, owner: currentOwner() }))
  writeFileSync(join(staging, 'daemon.json'), '{}\n')
  renameSync(staging, root)
  const spawned = new Set<LabProcess>()
  const engines = new Map<LabNode, Subprocess>()
  let stopped = false

  const stopSync = () => {
    if (stopped) return
    stopped = true
    running.delete(stopSync)
    keepLogs(name, root)
    sweepLab(name)
  }
  running.add(stopSync)
  installExitHandlers()

  let n: number
  try {
    n = makeNetwork(name)
  } catch (err) {
    stopSync()
    throw err
  }
  const t1 = performance.now()
  const subnetBase = `10.251.${n}`
  const nodeDir = (node: LabNode) => join(root, letter(node))
  const dockerSocket = (node: LabNode) => join(nodeDir(node), 'docker.sock')
  const inNode = (node: LabNode, part: 'engine' | 'procs', argv: string[]) => {
    const cgroup = nodeCgroup(name, letter(node), part)
    // The node's mount namespace's holder has a cgroup of its own: it outlives an engine's stop
    // (as a machine's mounts outlive `systemctl restart docker`) and goes with a power-off.
    const mounts = nodeCgroup(name, letter(node), 'mounts')
    for (const dir of [cgroup, mounts, join(nodeDir(node), 'mnt')]) mkdirSync(dir, { recursive: true })
    return [IN_NODE, cgroup, nodeNamespace(name, letter(node)), join(nodeDir(node), 'mnt'), join(nodeDir(node), 'mounts.pid'), mounts, ...argv]
  }

  const launchEngine = async (node: LabNode): Promise<void> => {
    const dir = nodeDir(node)
    mkdirSync(join(dir, 'etc'), { recursive: true })
    const logPath = join(dir, 'dockerd.log')
    // /etc/docker is bound to a folder of the node's: each engine makes its own key.json, so the
    // two engines (and the machine's) have distinct engine ids.
    const argv = inNode(node, 'engine', ['sh', '-c', '[ -d /etc/docker ] && mount --bind "$0" /etc/docker; exec dockerd "$@"', join(dir, 'etc'),
      '--config-file', join(root, 'daemon.json'), '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'exec'),
      '--pidfile', join(dir, 'dockerd.pid'), '-H', `unix://${dockerSocket(node)}`, '--cgroup-parent', sitesCgroupParent(name, letter(node))])
    const log = openSync(logPath, 'a')
    const proc = spawn(argv, { stdin: 'ignore', stdout: log, stderr: log })
    closeSync(log)
    engines.set(node, proc)
    await waitForEngine(dockerSocket(node), proc, logPath)
  }

  const exec = async (node: LabNode, argv: string[], opts: ExecOptions = {}): Promise<ExecResult> => {
    const proc = spawn(inNode(node, 'procs', argv), {
      env: nodeEnv(opts.env),
      stdin: opts.input === undefined ? 'ignore' : new TextEncoder().encode(opts.input),
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const timer = setTimeout(() => proc.kill('SIGKILL'), opts.timeoutMs ?? 60_000)
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    clearTimeout(timer)
    if (code !== 0 && !opts.allowFailure) throw new Error(`${argv.join(' ')} in node ${node} exited with ${code}: ${stderr || stdout}`)
    return { code, stdout, stderr }
  }

  const docker = async (node: LabNode, ...args: string[]): Promise<string> => {
    const proc = spawn(['docker', '-H', `unix://${dockerSocket(node)}`, ...args], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    if (code !== 0) throw new Error(`docker ${args.join(' ')} on node ${node} exited with ${code}: ${stderr || stdout}`)
    return stdout.trim()
  }

  const lab: Lab = {
    name,
    root,
    subnet: `${subnetBase}.0/24`,
    timings: { networkMs: t1 - t0, enginesMs: 0, totalMs: 0 },
    address: (node) => `${subnetBase}.${node === 'A' ? 1 : 2}`,
    hostAddress: (node = 'A') => `10.252.${n}.${node === 'A' ? 2 : 6}`,
    hostSideAddress: (node = 'A') => `10.252.${n}.${node === 'A' ? 1 : 5}`,
    dockerSocket,
    command: (node, argv) => inNode(node, 'procs', argv),
    exec,
    spawn(node, argv, env = {}) {
      const proc = spawn(inNode(node, 'procs', argv), { env: nodeEnv(env), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
      const output = collectOutput(proc)
      const handle: LabProcess = {
        proc,
        output,
        async kill(signal = 'SIGTERM') {
          if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal)
          await proc.exited
          spawned.delete(handle)
        },
      }
      spawned.add(handle)
      return handle
    },
    docker,
    async loadImages(images, ...nodes) {
      const targets = nodes.length > 0 ? nodes : NODES
      const loads = targets.map((node) => `docker -H unix://${dockerSocket(node)} load -q >/dev/null`)
      // One `docker save`, teed to every node's `docker load`.
      const pipeline = `docker -H unix://${ENGINE_SOCKET} save "$@" | ${loads.slice(0, -1).map((load) => `tee >(${load}) | `).join('')}${loads.at(-1)}; wait`
      const proc = spawn(['bash', '-o', 'pipefail', '-c', pipeline, 'load', ...images], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
      const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
      if (code !== 0) throw new Error(`loading ${images.join(', ')} into ${targets.join(', ')} failed: ${stderr}`)
      for (const node of targets) await docker(node, 'image', 'inspect', '-f', '{{.Id}}', ...images)
    },
    async swarmInit() {
      await docker('A', 'swarm', 'init', '--advertise-addr', lab.address('A'), '--listen-addr', `${lab.address('A')}:2377`)
      return docker('A', 'swarm', 'join-token', '-q', 'worker')
    },
    async swarmJoin(node = 'B') {
      const token = await docker('A', 'swarm', 'join-token', '-q', 'worker')
      await docker(node, 'swarm', 'join', '--token', token, '--advertise-addr', lab.address(node), '--listen-addr', `${lab.address(node)}:2377`, `${lab.address('A')}:2377`)
    },
    swarmNodeId: (node) => docker(node, 'info', '-f', '{{.Swarm.NodeID}}'),
    async stopEngine(node, opts = {}) {
      const proc = engines.get(node)
      if (opts.graceful && proc && proc.exitCode === null) {
        proc.kill('SIGTERM')
        await Promise.race([proc.exited, Bun.sleep(60_000)])
      }
      for (const part of ['engine', 'sites'] as const) killCgroup(nodeCgroup(name, letter(node), part))
      // A killed engine leaves its pidfiles: the next dockerd would take a live process of a reused
      // pid (or an unreaped one) for its containerd and wait 30 s for it, then exit.
      for (const file of [dockerSocket(node), join(nodeDir(node), 'dockerd.pid'), join(nodeDir(node), 'exec', 'containerd', 'containerd.pid')]) rmSync(file, { force: true })
    },
    async powerOff(node) {
      await lab.stopEngine(node)
      killCgroup(nodeCgroup(name, letter(node), 'procs'))
      // Its mounts go with it (the sites' disks), as a machine's at a power-off.
      killCgroup(nodeCgroup(name, letter(node), 'mounts'))
    },
    async startEngine(node) {
      const started = performance.now()
      await launchEngine(node)
      return performance.now() - started
    },
    memoryBytes(node) {
      const pids = ['engine', 'sites'].flatMap((part) => pidsIn(nodeCgroup(name, letter(node), part as 'engine' | 'sites')))
      return pids.reduce((sum, pid) => {
        try {
          const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
          return sum + Number(kb ?? 0) * 1024
        } catch {
          return sum
        }
      }, 0)
    },
    async stop() {
      stopSync()
      await Promise.all([...spawned].map((p) => p.proc.exited))
    },
  }
  try {
    await Promise.all(NODES.map(launchEngine))
  } catch (err) {
    stopSync()
    throw err
  }
  lab.timings.enginesMs = performance.now() - t1
  lab.timings.totalMs = performance.now() - t0
  return lab
}

/** Polls `probe` every 50 ms until it answers a truthy value; throws after `ms`. */
export async function waitFor<T>(what: string, ms: number, probe: () => Promise<T | undefined | null | '' | false>): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await probe().catch(() => undefined)
    if (value) return value
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`)
    await Bun.sleep(50)
  }
}
