import { spawn, spawnSync } from 'node:child_process'
import { openSync, readFileSync, readlinkSync } from 'node:fs'
import { ENGINE_SOCKET } from './engine'

const DEFAULT_SOCKET = '/var/run/docker.sock'

/**
 * Restarts the Docker engine serving `socketPath` (the tests' engine by default), as a hoster's
 * `systemctl restart docker` or an engine upgrade would: through systemd when it runs that
 * engine, else by stopping that dockerd process (SIGTERM) and starting it again with the same
 * arguments in a session of its own (`setsid`), the way scripts/setup.sh starts it, with its
 * output appended to the file it wrote to before. Resolves once it answers again, with the time
 * (`performance.now()`) it first answered.
 * `whileStopped` runs between the stop and the start (what a box left behind at a reboot, say).
 * Only for the solo test tier: every container on that engine stops meanwhile.
 */
export async function restartDockerd(socketPath = ENGINE_SOCKET, whileStopped?: () => void | Promise<void>): Promise<number> {
  const systemd = socketPath === DEFAULT_SOCKET && spawnSync('systemctl', ['is-active', '--quiet', 'docker']).status === 0
  if (systemd) {
    spawnSync('systemctl', whileStopped ? ['stop', 'docker.socket', 'docker'] : ['restart', 'docker'], { stdio: 'inherit' })
    if (whileStopped) {
      await whileStopped()
      spawnSync('systemctl', ['start', 'docker'], { stdio: 'inherit' })
    }
  } else {
    const pid = dockerdServing(socketPath)
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean)
    const logPath = outputFileOf(pid) ?? '/var/log/dockerd.log'
    process.kill(pid, 'SIGTERM')
    const deadline = Date.now() + 60_000
    while (spawnSync('kill', ['-0', String(pid)]).status === 0) {
      if (Date.now() > deadline) throw new Error('dockerd did not stop within 60 s')
      await Bun.sleep(100)
    }
    await whileStopped?.()
    const log = openSync(logPath, 'a')
    spawn('setsid', argv, { detached: true, stdio: ['ignore', log, log] }).unref()
  }
  const deadline = Date.now() + 60_000
  while (spawnSync('docker', ['-H', `unix://${socketPath}`, 'info'], { stdio: 'ignore' }).status !== 0) {
    if (Date.now() > deadline) throw new Error('dockerd did not answer within 60 s of its restart')
    await Bun.sleep(50)
  }
  return performance.now()
}

/**
 * Freezes the dockerd serving `socketPath` (SIGSTOP) for `ms`, then lets it go on (SIGCONT): an
 * engine that answers nothing while every connection stays open, as a hung engine or a broken
 * transport looks from Berth. Containers keep running meanwhile (their shims are apart).
 */
export async function freezeDockerd(ms: number, socketPath = ENGINE_SOCKET): Promise<void> {
  const pid = dockerdServing(socketPath)
  process.kill(pid, 'SIGSTOP')
  try {
    await Bun.sleep(ms)
  } finally {
    process.kill(pid, 'SIGCONT')
  }
}

/** The pid of the dockerd process listening on `socketPath` (its -H/--host flags, or the default). */
function dockerdServing(socketPath: string): number {
  const pids = spawnSync('pgrep', ['-x', 'dockerd'], { encoding: 'utf8' }).stdout.trim().split('\n').filter(Boolean).map(Number)
  const found = pids.find((pid) => {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    const hosts = args.flatMap((a, i) => (a === '-H' || a === '--host' ? [args[i + 1]] : a.startsWith('--host=') ? [a.slice(7)] : []))
    return hosts.length === 0 ? socketPath === DEFAULT_SOCKET : hosts.includes(`unix://${socketPath}`)
  })
  if (!found) throw new Error(`no dockerd process serves ${socketPath}`)
  return found
}

/** The file a process's stdout goes to, when it is a file. */
function outputFileOf(pid: number): string | undefined {
  try {
    const target = readlinkSync(`/proc/${pid}/fd/1`)
    return target.startsWith('/') && !target.startsWith('/dev/') ? target : undefined
  } catch {
    return undefined
  }
}
