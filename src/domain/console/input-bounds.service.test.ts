import { randomBytes } from 'node:crypto'
import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DockerRuntime } from '../../drivers/runtime/docker'
import { IMAGES } from '../../drivers/runtime/images'
import { LABEL, SITE_HOME } from '../../drivers/runtime/site-container'
import { ManualClock } from '../../lib/clock'
import { memoryLogger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { AuditEnd, AuditTrail } from '../audit/trail'
import { CONSOLE_LIMITS, ConsoleSessions, type SessionEnd } from './sessions'
import { removeEngineInstance } from '../../../test/helpers/engine-instance'

// What a console session lets a peer pile up (issue 36), on the real engine: input the shell
// does not read ends the session past CONSOLE_LIMITS.inputBytes; a flood of resizes collapses
// into the newest instead of one engine call each.
const SOCKET = '/var/run/docker.sock'
const docker = new Docker({ socketPath: SOCKET })
const instanceId = `t${randomBytes(4).toString('hex')}`
const runtime = new DockerRuntime({ socketPath: SOCKET, instanceId, subnetPool: '10.235.0.0/16', pidsLimit: 128, log: memoryLogger() })
const SLUG = 'bounded'
const grant = { siteId: 'site-b', slug: SLUG, accountId: 'acc-b', keyId: 'key-b', keyPrefix: 'svc_87654321' }
const ends: AuditEnd[] = []
const trail: AuditTrail = { begin: () => ({ end: (outcome) => void ends.push(outcome) }) }
const sessions = new ConsoleSessions({
  clock: new ManualClock(Date.now()), log: memoryLogger(), runtime, audit: trail, home: SITE_HOME,
  keyActive: () => true,
  site: () => ({ id: grant.siteId, slug: SLUG, status: 'active' }) as SiteRow,
  version: () => 1,
  limits: { ...CONSOLE_LIMITS, checkMs: 3_600_000 },
})

async function open() {
  let output = ''
  let ended: SessionEnd | null = null
  const session = await sessions.start(grant, { cols: 80, rows: 24 }, {
    output: (bytes) => ((output += Buffer.from(bytes).toString('utf8')), true),
    ended: (end) => (ended = end),
  })
  return {
    session,
    get ended() { return ended },
    async waitFor(pattern: RegExp, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      while (!pattern.test(output)) {
        if (Date.now() > deadline) throw new Error(`no ${pattern} in ${JSON.stringify(output.slice(-500))}`)
        await Bun.sleep(10)
      }
    },
  }
}

beforeAll(async () => {
  await runtime.ensureSite({ siteId: grant.siteId, slug: SLUG, hostingType: 'shared', image: IMAGES.static, memoryMb: 128, cpuCores: 0.5, pidsLimit: 64, diskGb: 1, sshPort: null })
}, 120_000)
afterAll(async () => {
  await sessions.closeAll()
  await removeEngineInstance(docker, instanceId)
}, 60_000)

describe('console input', () => {
  it('ends a session whose shell does not read once more than 4 MiB waits, saying why (and in the audit trail)', async () => {
    const s = await open()
    s.session.input(new TextEncoder().encode('echo ready; sleep 60\n'))
    await s.waitFor(/ready/)
    const chunk = new Uint8Array(256 * 1024).fill(0x61)
    for (let i = 0; i < 64 && !s.ended; i++) s.session.input(chunk)
    expect(s.ended).toEqual({ exitCode: null, reason: { code: 'input_overflow', message: expect.stringContaining('more than 4 MiB of input was waiting for the shell') } })
    expect(ends.at(-1)).toEqual({ exitCode: null, reason: 'input over 4 MiB' })
  }, 30_000)

  it('applies the newest of 100,000 resizes sent at once, and the keys after them see it', async () => {
    const s = await open()
    await s.waitFor(/~ \$ /)
    for (let i = 1; i <= 100_000; i++) s.session.resize(80 + (i % 50), 24 + (i % 20))
    s.session.resize(131, 41)
    s.session.input(new TextEncoder().encode('stty size\n'))
    await s.waitFor(/41 131/, 10_000)
    s.session.hangUp()
  }, 30_000)
})
