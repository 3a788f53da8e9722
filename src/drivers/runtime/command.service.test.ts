import { randomBytes } from 'node:crypto'
import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { memoryLogger } from '../../lib/logger'
import { EXEC_MARK } from './command'
import { DockerRuntime } from './docker'
import { IMAGES } from './images'
import { LABEL, SITE_HOME } from './site-container'
import type { CommandSpec, SiteEndpoint } from './types'
import { removeEngineInstance } from '../../../test/helpers/engine-instance'

// ContainerRuntime.runCommand on the real engine, in both site images: busybox (berth/static)
// and Debian (berth/php). The images exist (`berth images build`); this run has its own
// instance id and removes what it made.
const SOCKET = '/var/run/docker.sock'
const docker = new Docker({ socketPath: SOCKET })
const instanceId = `t${randomBytes(4).toString('hex')}`
const runtime = new DockerRuntime({ socketPath: SOCKET, instanceId, subnetPool: '10.231.0.0/16', pidsLimit: 128, log: memoryLogger() })
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8')
const spec = (argv: string[], over: Partial<CommandSpec> = {}): CommandSpec => ({ argv, cwd: SITE_HOME, env: {}, timeoutMs: 30_000, keepBytes: 1024 * 1024, ...over })

/**
 * The processes that commands left in the container: those carrying the variable every process an
 * exec starts inherits (EXEC_MARK), as "pid command line", read from /proc by an exec of its own.
 */
async function leftovers(containerId: string): Promise<string[]> {
  const run = await docker.getContainer(containerId).exec({
    Cmd: ['sh', '-c', `for e in /proc/[0-9]*/environ; do p=\${e%/environ}; grep -q ${EXEC_MARK}= $e 2>/dev/null && echo "\${p#/proc/} $(tr "\\0" " " < $p/cmdline)"; done; exit 0`],
    AttachStdout: true, AttachStderr: true, Tty: true, User: '1000:1000',
  })
  const stream = await run.start({ Tty: true })
  let output = ''
  stream.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
  await new Promise((done) => stream.on('end', done))
  return output.split(/\r?\n/).filter((line) => line.trim())
}

afterAll(async () => {
  await removeEngineInstance(docker, instanceId)
}, 120_000)

describe.each([
  { image: IMAGES.static, slug: 'cmd-static' },
  { image: IMAGES.php, slug: 'cmd-php' },
])('runCommand in $image', ({ image, slug }) => {
  let site: SiteEndpoint

  beforeAll(async () => {
    site = await runtime.ensureSite({ siteId: `id-${slug}`, slug, hostingType: image === IMAGES.php ? 'vps' : 'shared', image, memoryMb: 256, cpuCores: 0.5, pidsLimit: 64, diskGb: 1, sshPort: null })
  }, 120_000)

  it('runs as the site user in its home, and answers the exit code; stdout and stderr apart', async () => {
    const r = await runtime.runCommand(slug, spec(['sh', '-c', 'id -u; echo $HOME; echo oops >&2; exit 3']))
    expect({ code: r.exitCode, out: text(r.stdout), err: text(r.stderr), timedOut: r.timedOut, truncated: r.truncated })
      .toEqual({ code: 3, out: '1000\n/home/site\n', err: 'oops\n', timedOut: false, truncated: false })
    expect(r.durationMs).toBeLessThan(5_000)
  })

  it('writes stdin and closes it; an empty input is an end of input too', async () => {
    const input = Buffer.from('line one\nline two\n')
    expect(text((await runtime.runCommand(slug, spec(['cat'], { stdin: input }))).stdout)).toBe('line one\nline two\n')
    const empty = await runtime.runCommand(slug, spec(['cat'], { timeoutMs: 10_000 }))
    expect({ code: empty.exitCode, out: text(empty.stdout), timedOut: empty.timedOut }).toEqual({ code: 0, out: '', timedOut: false })
    // Larger than a pipe holds (64 KiB): written while the command reads it.
    const big = randomBytes(700 * 1024).toString('hex').slice(0, 700 * 1024)
    const counted = await runtime.runCommand(slug, spec(['wc', '-c'], { stdin: Buffer.from(big) }))
    expect(text(counted.stdout).trim()).toBe(String(700 * 1024))
  })

  it('adds env and starts in cwd', async () => {
    const r = await runtime.runCommand(slug, spec(['sh', '-c', 'pwd; echo "$GREETING"'], { cwd: `${SITE_HOME}/public`, env: { GREETING: 'hello there' } }))
    expect(text(r.stdout)).toBe(`${SITE_HOME}/public\nhello there\n`)
  })

  it('kills the whole process group at the timeout, leaving nothing behind', async () => {
    const r = await runtime.runCommand(slug, spec(['sh', '-c', 'sleep 300 & sleep 300'], { timeoutMs: 2_000 }))
    expect({ code: r.exitCode, timedOut: r.timedOut }).toEqual({ code: 137, timedOut: true })
    expect(r.durationMs).toBeGreaterThanOrEqual(2_000)
    expect(r.durationMs).toBeLessThan(3_500)
    expect(await leftovers(site.containerId)).toEqual([])
  })

  it('leaves no watchdog behind when the command ends first', async () => {
    const r = await runtime.runCommand(slug, spec(['true'], { timeoutMs: 60_000 }))
    expect({ code: r.exitCode, timedOut: r.timedOut }).toEqual({ code: 0, timedOut: false })
    expect(await leftovers(site.containerId)).toEqual([])
  })

  it('kills a command that killed its own watchdog, by the backstop after the timeout', async () => {
    // The watchdog runs as the site user too (`sh -c 'sleep "$1"; kill ...' watchdog ...`),
    // started just after the command: found by its command line once it is there.
    const script = 'true; sleep 0.5; for p in /proc/[0-9]*; do case "$(tr "\\0" " " < $p/cmdline 2>/dev/null)" in "sh -c sleep "*) kill -9 ${p#/proc/};; esac; done; echo alone; sleep 300 & sleep 300'
    const r = await runtime.runCommand(slug, spec(['sh', '-c', script], { timeoutMs: 1_000 }))
    expect({ code: r.exitCode, timedOut: r.timedOut, out: text(r.stdout) }).toEqual({ code: 137, timedOut: true, out: 'alone\n' })
    expect(r.durationMs).toBeGreaterThanOrEqual(3_000)
    expect(r.durationMs).toBeLessThan(8_000)
    expect(await leftovers(site.containerId)).toEqual([])
  }, 20_000)

  it('answers when the command ends, leaving what it started in the background running', async () => {
    const r = await runtime.runCommand(slug, spec(['sh', '-c', 'sleep 30 >/dev/null 2>&1 & echo started'], { timeoutMs: 60_000 }))
    expect({ code: r.exitCode, timedOut: r.timedOut, out: text(r.stdout) }).toEqual({ code: 0, timedOut: false, out: 'started\n' })
    expect(r.durationMs).toBeLessThan(1_000)
    const left = await leftovers(site.containerId)
    expect(left).toEqual([expect.stringMatching(/ sleep 30 $/)])
    await runtime.runCommand(slug, spec(['kill', left[0]!.split(' ')[0]!]))
  })

  it('keeps the last bytes of each stream and says it truncated', async () => {
    const r = await runtime.runCommand(slug, spec(['sh', '-c', 'head -c 3000000 /dev/zero | tr "\\0" a; echo END; echo short >&2'], { keepBytes: 1024 * 1024 }))
    const out = text(r.stdout)
    expect(out.length).toBe(1024 * 1024)
    expect(out.endsWith('aaaEND\n')).toBe(true)
    expect(text(r.stderr)).toBe('short\n')
    expect(r.truncated).toBe(true)
    expect(r.exitCode).toBe(0)
  })
})
