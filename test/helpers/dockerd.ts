import { spawn, spawnSync } from 'node:child_process'
import { openSync } from 'node:fs'

/**
 * Restarts the Docker engine of this machine, as a hoster's `systemctl restart docker` or an
 * engine upgrade would: through systemd when it runs the engine, else by stopping the dockerd
 * process and starting it again the way scripts/setup.sh does. Resolves once it answers again.
 * Only for the solo test tier: every container on the machine stops meanwhile.
 */
export async function restartDockerd(): Promise<void> {
  const systemd = spawnSync('systemctl', ['is-active', '--quiet', 'docker']).status === 0
  if (systemd) {
    spawnSync('systemctl', ['restart', 'docker'], { stdio: 'inherit' })
  } else {
    const pid = Number(spawnSync('pgrep', ['-x', 'dockerd'], { encoding: 'utf8' }).stdout.trim().split('\n')[0])
    if (!pid) throw new Error('no dockerd process to restart')
    process.kill(pid, 'SIGTERM')
    const deadline = Date.now() + 60_000
    while (spawnSync('kill', ['-0', String(pid)]).status === 0) {
      if (Date.now() > deadline) throw new Error('dockerd did not stop within 60 s')
      await Bun.sleep(100)
    }
    const log = openSync('/var/log/dockerd.log', 'a')
    spawn('dockerd', [], { detached: true, stdio: ['ignore', log, log] }).unref()
  }
  const deadline = Date.now() + 60_000
  while (spawnSync('docker', ['info'], { stdio: 'ignore' }).status !== 0) {
    if (Date.now() > deadline) throw new Error('dockerd did not answer within 60 s of its restart')
    await Bun.sleep(200)
  }
}
