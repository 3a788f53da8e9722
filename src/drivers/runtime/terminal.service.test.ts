import { randomBytes } from 'node:crypto'
import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { memoryLogger } from '../../lib/logger'
import { DockerRuntime } from './docker'
import { IMAGES } from './images'
import { LABEL, SITE_HOME } from './site-container'
import type { Terminal } from './types'
import { removeEngineInstance } from '../../../test/helpers/engine-instance'

// Runs against the real engine (the images exist: `berth images build`), with an instance id of
// its own; afterAll removes what it made.
const SOCKET = '/var/run/docker.sock'
const docker = new Docker({ socketPath: SOCKET })
const instanceId = `t${randomBytes(4).toString('hex')}`
const runtime = new DockerRuntime({ socketPath: SOCKET, instanceId, subnetPool: '10.232.0.0/16', pidsLimit: 128, log: memoryLogger() })
const SLUG = 'term'

/** Everything the terminal printed, and a wait for a pattern in what it printed since `from`. */
function follow(term: Terminal) {
  let text = ''
  term.onData((bytes) => (text += Buffer.from(bytes).toString('utf8')))
  return {
    get text() {
      return text
    },
    async waitFor(pattern: RegExp, from = 0, timeoutMs = 5000): Promise<RegExpMatchArray> {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const m = text.slice(from).match(pattern)
        if (m) return m
        if (Date.now() > deadline) throw new Error(`no ${pattern} in ${JSON.stringify(text.slice(from))}`)
        await Bun.sleep(10)
      }
    },
  }
}

/** The command lines of the site user's processes in the container, as `ps` shows them. */
async function processes(): Promise<string> {
  return (await runtime.exec(SLUG, ['ps', '-o', 'pid,args'])).output
}

beforeAll(async () => {
  await runtime.ensureSite({ siteId: `id-${SLUG}`, slug: SLUG, hostingType: 'shared', image: IMAGES.static, memoryMb: 128, cpuCores: 0.5, pidsLimit: 64, diskGb: 1, sshPort: null })
}, 120_000)

afterAll(async () => {
  await removeEngineInstance(docker, instanceId)
}, 60_000)

describe('openTerminal', () => {
  it('runs a shell with a real PTY as the site user, whose size follows a resize', async () => {
    const term = await runtime.openTerminal(SLUG, { argv: ['sh'], user: 'site', cwd: SITE_HOME, cols: 100, rows: 30 })
    const out = follow(term)
    term.write('echo "$((6*7)) $(id -u) $TERM $(pwd)"; stty size\n')
    await out.waitFor(/42 1000 xterm-256color \/home\/site\r?\n30 100/)
    await term.resize(132, 43)
    const from = out.text.length
    term.write('stty size; tty\n')
    await out.waitFor(/43 132\r?\n\/dev\/pts\/\d+/, from)
    term.write('exit 3\n')
    expect(await term.exited).toBe(3)
    await term.close()
  })

  it('holds its output while paused and hands it all over on resume', async () => {
    const term = await runtime.openTerminal(SLUG, { argv: ['sh'], user: 'site', cwd: SITE_HOME, cols: 80, rows: 24 })
    const out = follow(term)
    term.write('echo ready\n')
    await out.waitFor(/ready\r?\n/)
    term.pause()
    await Bun.sleep(100)
    const from = out.text.length
    term.write('seq 1 2000 | tail -n 1\n')
    await Bun.sleep(500)
    expect(out.text.slice(from)).not.toContain('2000')
    term.resume()
    await out.waitFor(/\r?\n2000\r?\n/, from)
    await term.close()
  })

  it('runs as root when asked', async () => {
    const term = await runtime.openTerminal(SLUG, { argv: ['sh', '-c', 'id -u; exit 0'], user: 'root', cwd: '/', cols: 80, rows: 24 })
    const out = follow(term)
    expect(await term.exited).toBe(0)
    expect(out.text.trim()).toBe('0')
  })

  it('passes env and reports the exit code of a command that ends by itself', async () => {
    const term = await runtime.openTerminal(SLUG, { argv: ['sh', '-c', 'echo "$GREETING"; exit 7'], user: 'site', cwd: SITE_HOME, env: { GREETING: 'hello there' }, cols: 80, rows: 24 })
    const out = follow(term)
    expect(await term.exited).toBe(7)
    expect(out.text).toContain('hello there')
  })

  it('close() kills the session and what it started (jobs, a setsid escapee), and is idempotent', async () => {
    const term = await runtime.openTerminal(SLUG, { argv: ['sh'], user: 'site', cwd: SITE_HOME, cols: 80, rows: 24 })
    const out = follow(term)
    // A background job, one that ignores SIGHUP, one in a session of its own, and a foreground
    // one: all four must go.
    term.write('sleep 1001 & (trap "" HUP; exec sleep 1002) & setsid sleep 1003 & echo started; sleep 1004\n')
    await out.waitFor(/started/)
    await Bun.sleep(200)
    const before = await processes()
    for (const n of [1001, 1002, 1003, 1004]) expect(before).toContain(`sleep ${n}`)
    await Promise.all([term.close(), term.close()])
    await term.close()
    expect(await term.exited).toBeNull()
    const left = await processes()
    expect(left).not.toMatch(/sleep 100\d/)
    // The site's own server was not the session's: it still runs.
    expect(left).toMatch(/httpd|busybox/)
  })

  it('works the same in the Debian image (bash, coreutils, no procps)', async () => {
    await runtime.ensureSite({ siteId: 'id-termphp', slug: 'termphp', hostingType: 'vps', image: IMAGES.php, memoryMb: 256, cpuCores: 0.5, pidsLimit: 64, diskGb: 1, sshPort: null })
    const term = await runtime.openTerminal('termphp', { argv: ['bash'], user: 'site', cwd: SITE_HOME, cols: 90, rows: 20 })
    const out = follow(term)
    term.write('stty size; sleep 1005 & (trap "" HUP; exec sleep 1006) & echo started\n')
    await out.waitFor(/20 90[\s\S]*started/)
    await term.close()
    const left = await runtime.exec('termphp', ['sh', '-c', 'cat /proc/[0-9]*/cmdline | tr "\\000" " "'])
    expect(left.output).not.toMatch(/sleep 100\d/)
    expect(left.output).toContain('php-fpm')
  }, 60_000)

  it('refuses a site that does not run', async () => {
    await expect(runtime.openTerminal('missing', { argv: ['sh'], user: 'site', cwd: SITE_HOME, cols: 80, rows: 24 })).rejects.toThrow(/not running/)
  })
})
