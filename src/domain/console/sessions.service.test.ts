import { randomBytes } from 'node:crypto'
import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DockerRuntime } from '../../drivers/runtime/docker'
import type { ContainerRuntime } from '../../drivers/runtime/types'
import { IMAGES } from '../../drivers/runtime/images'
import { LABEL, SITE_HOME } from '../../drivers/runtime/site-container'
import { ManualClock } from '../../lib/clock'
import { memoryLogger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { AuditEnd, AuditStart, AuditTrail } from '../audit/trail'
import { CONSOLE_LIMITS, ConsoleSessions, type SessionEnd } from './sessions'
import { ConsoleTickets } from './tickets'
import { removeEngineInstance } from '../../../test/helpers/engine-instance'

// The sessions' limits and endings on the real engine, with a clock the test moves: the idle and
// the 8-hour limits, a revoked key, a suspended or deleted site, the per-site limit, the audit.
const SOCKET = '/var/run/docker.sock'
const docker = new Docker({ socketPath: SOCKET })
const instanceId = `t${randomBytes(4).toString('hex')}`
const runtime = new DockerRuntime({ socketPath: SOCKET, instanceId, subnetPool: '10.233.0.0/16', pidsLimit: 128, log: memoryLogger() })
const SLUG = 'consoled'
const grant = { siteId: 'site-1', slug: SLUG, accountId: 'acc-1', keyId: 'key-1', keyPrefix: 'svc_12345678' }

/** The world the sessions read, as the test sets it: key, site status, the store's version. */
const world = { keyActive: true, status: 'active' as SiteRow['status'] | 'gone', version: 1 }
const audit: { start: AuditStart; end: AuditEnd | null }[] = []
const trail: AuditTrail = {
  begin(start) {
    const record = { start, end: null as AuditEnd | null }
    audit.push(record)
    return { end: (outcome) => (record.end ??= outcome) }
  },
}
const clock = new ManualClock(Date.now())
const sessionsDeps: ConstructorParameters<typeof ConsoleSessions>[0] = {
  clock, log: memoryLogger(), runtime, audit: trail, home: SITE_HOME,
  keyActive: () => world.keyActive,
  site: () => (world.status === 'gone' ? undefined : ({ id: grant.siteId, slug: SLUG, status: world.status } as SiteRow)),
  version: () => world.version,
  // No timer in the way: the test calls check() itself.
  limits: { ...CONSOLE_LIMITS, checkMs: 3_600_000 },
}
const sessions = new ConsoleSessions(sessionsDeps)

/** A session joined to a peer that keeps what it got. */
async function open(from = sessions) {
  let output = ''
  let ended: SessionEnd | null = null
  const session = await from.start(grant, { cols: 80, rows: 24 }, {
    output: (bytes) => ((output += Buffer.from(bytes).toString('utf8')), true),
    ended: (end) => (ended = end),
  })
  return {
    session,
    get output() { return output },
    get ended() { return ended },
    async waitFor(pattern: RegExp) {
      const deadline = Date.now() + 5000
      while (!pattern.test(output)) {
        if (Date.now() > deadline) throw new Error(`no ${pattern} in ${JSON.stringify(output)}`)
        await Bun.sleep(10)
      }
    },
  }
}

const sleeps = async () => (await runtime.exec(SLUG, ['ps', '-o', 'args'])).output.match(/sleep 77\d/g) ?? []

beforeAll(async () => {
  await runtime.ensureSite({ siteId: grant.siteId, slug: SLUG, hostingType: 'shared', image: IMAGES.static, memoryMb: 128, cpuCores: 0.5, pidsLimit: 64, diskGb: 1, sshPort: null })
}, 120_000)
afterAll(async () => {
  await sessions.closeAll()
  await removeEngineInstance(docker, instanceId)
}, 60_000)

describe('console sessions', () => {
  it('applies a resize before the keys typed right after it, however slow the engine is to apply it: stty size shows the new size', async () => {
    // The engine takes 300 ms to apply each resize (a loaded box), while keys go straight down the stream.
    const slowResizes: Pick<ContainerRuntime, 'openTerminal'> = {
      async openTerminal(slug, opts) {
        const terminal = await runtime.openTerminal(slug, opts)
        const resize = terminal.resize.bind(terminal)
        terminal.resize = async (cols, rows) => {
          await Bun.sleep(300)
          return resize(cols, rows)
        }
        return terminal
      },
    }
    const s = await open(new ConsoleSessions({ ...sessionsDeps, runtime: slowResizes }))
    await s.waitFor(/~ \$ /)
    for (const [cols, rows] of [[101, 33], [57, 19]] as const) {
      s.session.resize(cols, rows)
      s.session.input(new TextEncoder().encode('stty size\n'))
      await s.waitFor(new RegExp(`^${rows} ${cols}\\r?$`, 'm'))
    }
    s.session.input(new TextEncoder().encode('exit\n'))
  })

  it('records a session that ends by itself with its exit code, begun with the key', async () => {
    const s = await open()
    s.session.input(new TextEncoder().encode('exit 4\n'))
    await s.waitFor(/exit 4/)
    for (let i = 0; i < 200 && !s.ended; i++) await Bun.sleep(10)
    expect(s.ended).toEqual({ exitCode: 4, reason: null })
    expect(audit.at(-1)).toEqual({ start: { siteId: grant.siteId, kind: 'console', actor: { kind: 'key', keyId: 'key-1', keyPrefix: 'svc_12345678' }, command: null }, end: { exitCode: 4 } })
  })

  it('ends a session idle 15 minutes (input resets the wait), and one 8 hours old, killing its processes', async () => {
    const idle = await open()
    idle.session.input(new TextEncoder().encode('sleep 771 &\n'))
    clock.advance(CONSOLE_LIMITS.idleMs - 1000)
    idle.session.input(new TextEncoder().encode(':\n'))
    clock.advance(CONSOLE_LIMITS.idleMs - 1000)
    sessions.check()
    expect(idle.ended).toBeNull()
    clock.advance(1000)
    sessions.check()
    expect(idle.ended).toMatchObject({ exitCode: null, reason: { code: 'idle_timeout' } })
    expect(audit.at(-1)!.end).toEqual({ exitCode: null, reason: 'idle 15 min' })

    const busy = await open()
    for (let spent = 0; spent < CONSOLE_LIMITS.maxMs; spent += CONSOLE_LIMITS.idleMs / 2) {
      busy.session.input(new TextEncoder().encode(':\n'))
      clock.advance(CONSOLE_LIMITS.idleMs / 2)
      sessions.check()
    }
    expect(busy.ended).toMatchObject({ reason: { code: 'session_too_long' } })
    expect(audit.at(-1)!.end).toEqual({ exitCode: null, reason: '8 h limit' })
    for (let i = 0; i < 50 && (await sleeps()).length > 0; i++) await Bun.sleep(100)
    expect(await sleeps()).toEqual([])
  })

  it('ends sessions when the key is revoked or the site suspended or deleted, once the store moved', async () => {
    for (const [change, code, words] of [
      [() => (world.keyActive = false), 'key_revoked', 'key revoked'],
      [() => (world.status = 'suspended'), 'site_unavailable', 'site suspended'],
      [() => (world.status = 'gone'), 'site_unavailable', 'site deleted'],
    ] as const) {
      Object.assign(world, { keyActive: true, status: 'active' })
      world.version++
      const s = await open()
      change()
      sessions.check()
      // Nothing read while the store did not move.
      expect(s.ended).toBeNull()
      world.version++
      sessions.check()
      expect(s.ended).toMatchObject({ exitCode: null, reason: { code } })
      expect(audit.at(-1)!.end).toEqual({ exitCode: null, reason: words })
    }
    Object.assign(world, { keyActive: true, status: 'active' })
    world.version++
  })

  it('refuses to start for a revoked key or a suspended site, and beyond three sessions per site', async () => {
    world.keyActive = false
    await expect(open()).rejects.toMatchObject({ kind: 'unauthorized' })
    world.keyActive = true
    world.status = 'suspended'
    await expect(open()).rejects.toMatchObject({ kind: 'conflict' })
    world.status = 'active'
    const three = await Promise.all([open(), open(), open()])
    await expect(open()).rejects.toMatchObject({ kind: 'over_budget', retryAfterSeconds: 30 })
    three[0]!.session.hangUp()
    const fourth = await open()
    expect(three[0]!.ended).toMatchObject({ reason: { code: 'closed' } })
    for (const s of [...three.slice(1), fourth]) s.session.hangUp()
  })
})

describe('console tickets', () => {
  it('are 256-bit, single use by take (peek leaves them), valid for their lifetime, then expired', () => {
    const t = new ConsoleTickets(clock, 60_000)
    const { ticket, expiresAt } = t.issue(grant)
    expect(ticket).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(expiresAt).toBe(clock.now() + 60_000)
    expect(t.peek(ticket)).toMatchObject({ state: 'valid', grant })
    expect(t.peek(ticket).state).toBe('valid')
    expect(t.take(ticket).state).toBe('valid')
    expect(t.take(ticket).state).toBe('used')
    expect(t.peek('x'.repeat(43)).state).toBe('unknown')
    const late = t.issue(grant).ticket
    clock.advance(59_999)
    expect(t.peek(late).state).toBe('valid')
    clock.advance(1)
    expect(t.take(late).state).toBe('expired')
    // Long after, a spent ticket is forgotten.
    clock.advance(2 * 3_600_000)
    t.issue(grant)
    expect(t.peek(late).state).toBe('unknown')
  })
})
