import { spawn, spawnSync, type Subprocess } from 'bun'
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * Private Docker engines for tests that need a Swarm (issue 28): never the machine's shared
 * engine, which must not be `swarm init`ed. `count` dockerds, each in a network namespace of its
 * own (`{name}-{i}`) with its own data root, exec root, /etc/docker and socket under a temporary
 * folder, the namespaces joined by veth pairs to the first one on 10.249.{net}.0/24 (engine i has
 * 10.249.{net}.{i + 1}). Each runs as `ip netns exec` would, in a private mount namespace with a
 * fresh sysfs and the host's cgroup tree put back under it (dockerd and runc need it).
 *
 * `stop()` kills every process of the namespaces and removes them, the links and the folder
 * (`/tmp/{name}`); it runs at process exit too, and a run killed before either is swept at the
 * next start of the same name, so a failed or interrupted test leaves nothing behind. For the
 * whole two-node lab (a control plane and an agent), see test/lab.
 */
export interface PrivateEngines {
  /** engine i's socket and its address on the private network. */
  engines: { socket: string; address: string; namespace: string }[]
  stop(): void
}

const ENGINE_WAIT_MS = 30_000

export async function startPrivateEngines(name: string, count: number, net: number): Promise<PrivateEngines> {
  const root = join(tmpdir(), name)
  const namespaces = Array.from({ length: count }, (_, i) => `${name}-${i}`)
  const links = namespaces.slice(1).map((_, i) => `${name.slice(0, 8)}v${i + 1}`)
  const procs: Subprocess[] = []
  let stopped = false
  /** Kills what runs in the namespaces and removes them, the links and the folder (a run killed before its stop left them). */
  const sweep = () => {
    for (const ns of namespaces) {
      // dockerd, its containerd, the shims and containers: whatever still runs in the namespace.
      const pids = sh(['ip', 'netns', 'pids', ns], true).stdout.split('\n').filter(Boolean)
      if (pids.length > 0) sh(['kill', '-9', ...pids], true)
    }
    for (const link of links) sh(['ip', 'link', 'del', link], true)
    for (const ns of namespaces) sh(['ip', 'netns', 'del', ns], true)
    rmSync(root, { recursive: true, force: true })
  }
  const stop = () => {
    if (stopped) return
    stopped = true
    for (const p of procs) p.kill('SIGTERM')
    const deadline = Date.now() + 10_000
    while (procs.some((p) => p.exitCode === null && p.signalCode === null) && Date.now() < deadline) Bun.sleepSync(100)
    sweep()
  }
  process.once('exit', stop)
  try {
    sweep()
    mkdirSync(root, { recursive: true })
    for (const ns of namespaces) {
      sh(['ip', 'netns', 'add', ns])
      sh(['ip', '-n', ns, 'link', 'set', 'lo', 'up'])
    }
    const address = (i: number) => `10.249.${net}.${i + 1}`
    sh(['ip', '-n', namespaces[0]!, 'link', 'add', 'br0', 'type', 'bridge'])
    sh(['ip', '-n', namespaces[0]!, 'addr', 'add', `${address(0)}/24`, 'dev', 'br0'])
    sh(['ip', '-n', namespaces[0]!, 'link', 'set', 'br0', 'up'])
    links.forEach((link, k) => {
      const i = k + 1
      sh(['ip', 'link', 'del', link], true)
      sh(['ip', 'link', 'add', link, 'netns', namespaces[0]!, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', namespaces[i]!])
      sh(['ip', '-n', namespaces[0]!, 'link', 'set', link, 'master', 'br0', 'up'])
      sh(['ip', '-n', namespaces[i]!, 'addr', 'add', `${address(i)}/24`, 'dev', 'eth0'])
      sh(['ip', '-n', namespaces[i]!, 'link', 'set', 'eth0', 'up'])
    })
    writeFileSync(join(root, 'daemon.json'), '{}\n')
    const engines = namespaces.map((namespace, i) => {
      const dir = join(root, `e${i}`)
      for (const sub of ['etc', 'mnt']) mkdirSync(join(dir, sub), { recursive: true })
      const socket = join(dir, 'docker.sock')
      const log = openSync(join(dir, 'dockerd.log'), 'a')
      procs.push(spawn([
        'nsenter', `--net=/run/netns/${namespace}`, '--', 'unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c',
        'set -e; mount --rbind /sys/fs/cgroup "$0/mnt"; mount -t sysfs sysfs /sys; mount --move "$0/mnt" /sys/fs/cgroup; ' +
          '[ -d /etc/docker ] && mount --bind "$0/etc" /etc/docker; shift; exec dockerd "$@"',
        dir, '--', '--config-file', join(root, 'daemon.json'), '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'exec'),
        '--pidfile', join(dir, 'dockerd.pid'), '-H', `unix://${socket}`,
      ], { stdin: 'ignore', stdout: log, stderr: log }))
      closeSync(log)
      return { socket, address: address(i), namespace }
    })
    await Promise.all(engines.map((e, i) => waitForEngine(e.socket, procs[i]!, join(root, `e${i}`, 'dockerd.log'))))
    return { engines, stop }
  } catch (err) {
    stop()
    throw err
  }
}

async function waitForEngine(socket: string, proc: Subprocess, logPath: string): Promise<void> {
  const deadline = Date.now() + ENGINE_WAIT_MS
  while (Date.now() < deadline && proc.exitCode === null) {
    if (existsSync(socket) && sh(['docker', '-H', `unix://${socket}`, 'version'], true).status === 0) return
    await Bun.sleep(100)
  }
  throw new Error(`a private dockerd did not answer on ${socket} (exit ${proc.exitCode}):\n${readFileSync(logPath, 'utf8').slice(-2000)}`)
}

function sh(argv: string[], allowFailure = false): { status: number; stdout: string } {
  const p = spawnSync(argv, { stdout: 'pipe', stderr: 'pipe' })
  if (p.exitCode !== 0 && !allowFailure) throw new Error(`${argv.join(' ')} failed: ${p.stderr.toString()}`)
  return { status: p.exitCode ?? -1, stdout: p.stdout.toString() }
}
