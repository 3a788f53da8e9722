import { randomBytes } from 'node:crypto'
import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { memoryLogger } from '../../lib/logger'
import { DockerRuntime } from './docker'
import { IMAGES } from './images'
import { LABEL, SITE_HOME } from './site-container'
import type { Terminal } from './types'
import { removeEngineInstance } from '../../../test/helpers/engine-instance'

// A terminal's input under backpressure, and a root terminal's HOME (issue 36), on the real
// engine with an instance id of its own; afterAll removes what it made.
const SOCKET = '/var/run/docker.sock'
const docker = new Docker({ socketPath: SOCKET })
const instanceId = `t${randomBytes(4).toString('hex')}`
const runtime = new DockerRuntime({ socketPath: SOCKET, instanceId, subnetPool: '10.234.0.0/16', pidsLimit: 128, log: memoryLogger() })
const SLUG = 'term-input'
const MiB = 1024 * 1024

beforeAll(async () => {
  await runtime.ensureSite({ siteId: `id-${SLUG}`, slug: SLUG, hostingType: 'shared', image: IMAGES.static, memoryMb: 128, cpuCores: 0.5, pidsLimit: 64, diskGb: 1, sshPort: null })
}, 120_000)
afterAll(async () => {
  await removeEngineInstance(docker, instanceId)
}, 60_000)

/** Writes 1 MiB chunks until `write` answers false (at most `maxMiB`); how many MiB went. */
function fill(term: Terminal, maxMiB: number): number {
  const chunk = new Uint8Array(MiB).fill(0x61)
  for (let i = 1; i <= maxMiB; i++) if (!term.write(chunk)) return i
  return maxMiB
}

describe('a terminal\'s input', () => {
  it('answers false once the container stops taking it, and counts what waits', async () => {
    // A process that never reads its terminal.
    const term = await runtime.openTerminal(SLUG, { argv: ['sleep', '60'], user: 'site', cwd: SITE_HOME, cols: 80, rows: 24 })
    term.onData(() => {})
    try {
      const sent = fill(term, 256)
      expect(sent).toBeLessThan(256)
      expect(term.pendingInput).toBeGreaterThan(0)
    } finally {
      await term.close()
    }
  }, 60_000)

  it('hears when the waiting input went, for a process that reads it all', async () => {
    const term = await runtime.openTerminal(SLUG, { argv: ['sh', '-c', 'stty raw -echo; echo reading; cat > /dev/null'], user: 'site', cwd: SITE_HOME, cols: 80, rows: 24 })
    let text = ''
    term.onData((bytes) => (text += Buffer.from(bytes).toString('utf8')))
    try {
      const deadline = Date.now() + 5000
      while (!text.includes('reading')) {
        if (Date.now() > deadline) throw new Error(`the process did not start: ${JSON.stringify(text)}`)
        await Bun.sleep(10)
      }
      const drained = new Promise<void>((done) => term.onWritable(done))
      expect(fill(term, 256)).toBeLessThan(256)
      await Promise.race([drained, Bun.sleep(20_000).then(() => { throw new Error(`not drained; ${term.pendingInput} bytes wait`) })])
      expect(term.pendingInput).toBe(0)
    } finally {
      await term.close()
    }
  }, 60_000)
})

describe('a root terminal', () => {
  it('has HOME=/root and an empty ENV, whatever the container sets', async () => {
    const term = await runtime.openTerminal(SLUG, { argv: ['sh', '-c', 'echo "uid=$(id -u) home=$HOME env=[$ENV]"'], user: 'root', cwd: SITE_HOME, cols: 80, rows: 24 })
    let text = ''
    term.onData((bytes) => (text += Buffer.from(bytes).toString('utf8')))
    expect(await term.exited).toBe(0)
    expect(text).toContain('uid=0 home=/root env=[]')
    const site = await runtime.openTerminal(SLUG, { argv: ['sh', '-c', 'echo "home=$HOME"'], user: 'site', cwd: SITE_HOME, cols: 80, rows: 24 })
    let siteText = ''
    site.onData((bytes) => (siteText += Buffer.from(bytes).toString('utf8')))
    expect(await site.exited).toBe(0)
    expect(siteText).toContain('home=/home/site')
  }, 60_000)
})
