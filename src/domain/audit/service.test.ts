import { describe, expect, it } from 'vitest'
import { domainStore, type DomainStore } from '../../../test/helpers/domain-store'
import { AuditRepository } from './repository'
import { AUDIT_COMMAND_BYTES, AUDIT_RETENTION_DAYS, AuditLog } from './service'
import { commandLineOf } from './command-line'
import type { AuditActor } from './trail'

/**
 * The audit trail on a real store with the migrations applied: what a record holds from its
 * start, its one line of `logs?type=audit`, the newest lines of one site only, and retention.
 * test/sites-shell.e2e.test.ts reads the line of a real admin shell through the API.
 */
const KEY: AuditActor = { kind: 'key', keyId: 'key-1', keyPrefix: 'svc_ab12cd34' }
const ADMIN: AuditActor = { kind: 'admin', user: 'alice' }
const DAY = 86_400_000

function setup(keep?: { days: number; perSite: number }) {
  const t = domainStore()
  const plan = t.plans.list()[0]!.slug
  const site = () => {
    const id = crypto.randomUUID()
    t.store.sqlite.prepare("insert into sites (id, account_id, slug, plan_slug, status, created_at, updated_at) values (?, ?, ?, ?, 'active', ?, ?)")
      .run(id, t.account(), `s${id.slice(0, 8)}`, plan, t.clock.now(), t.clock.now())
    return id
  }
  const audit = new AuditLog(new AuditRepository(t.store), t.clock, t.log, keep)
  const lines = (siteId: string, lines = 100, search?: string) => audit.lines(siteId, { lines, search })
  return { t, site, audit, lines }
}

/**
 * Records `n` commands on the site, one a second: `echo 0` .. `echo n-1`, each exiting 0. In one
 * transaction of the store: 1,203 records are otherwise 2,406 commits synced to disk (14 s here).
 */
function fill(s: ReturnType<typeof setup>, siteId: string, n: number) {
  s.t.store.write(() => {
    for (let i = 0; i < n; i++) {
      const record = s.audit.begin({ siteId, kind: 'exec', actor: KEY, command: `echo ${i}` })
      s.t.clock.advance(1000)
      record.end({ exitCode: 0 })
    }
  })
}

const at = (t: DomainStore) => new Date(t.clock.now()).toISOString()

describe('AuditLog', () => {
  it('writes the record when the command starts (a crash leaves it open) and completes it once at its end', () => {
    const s = setup()
    const siteId = s.site()
    const started = at(s.t)
    const record = s.audit.begin({ siteId, kind: 'exec', actor: KEY, command: commandLineOf(['sh', '-c', 'id -u']) })
    // Before the end, the line says no end is recorded: what a crash leaves.
    expect(s.lines(siteId)).toEqual([`${started} exec key=svc_ab12cd34 open cmd: sh -c 'id -u'`])
    s.t.clock.advance(12)
    record.end({ exitCode: 3 })
    s.t.clock.advance(5000)
    record.end({ exitCode: 0, reason: 'late' })
    expect(s.lines(siteId)).toEqual([`${started} exec key=svc_ab12cd34 exit=3 duration_ms=12 cmd: sh -c 'id -u'`])
    const row = s.t.store.sqlite.query<Record<string, unknown>, []>('select * from audit_events').get()!
    expect(row).toMatchObject({ site_id: siteId, kind: 'exec', actor: 'key', key_id: 'key-1', key_prefix: 'svc_ab12cd34', exit_code: 3, reason: null, run_as: 'site' })
    expect(row.account_id).toBe(s.t.store.sqlite.query<{ a: string }, [string]>('select account_id a from sites where id = ?').get(siteId)!.a)
  })

  it('writes a console session, an admin shell as root and a record that ended for a reason, one readable line each', () => {
    const s = setup()
    const siteId = s.site()
    const t0 = at(s.t)
    const console = s.audit.begin({ siteId, kind: 'console', actor: KEY, command: null })
    s.t.clock.advance(900_000)
    console.end({ exitCode: null, reason: 'idle 15 min' })
    const t1 = at(s.t)
    const shell = s.audit.begin({ siteId, kind: 'shell', actor: ADMIN, command: null, runAs: 'root' })
    s.t.clock.advance(5210)
    shell.end({ exitCode: 0 })
    const t2 = at(s.t)
    s.audit.begin({ siteId, kind: 'shell', actor: { kind: 'admin', user: 'bob smith' }, command: commandLineOf(['sh', '-c', 'exit 7']) }).end({ exitCode: 7 })
    expect(s.lines(siteId)).toEqual([
      `${t0} console key=svc_ab12cd34 exit=none duration_ms=900000 reason="idle 15 min"`,
      `${t1} shell admin=alice as=root exit=0 duration_ms=5210`,
      `${t2} shell admin=bob\\x20smith exit=7 duration_ms=0 cmd: sh -c 'exit 7'`,
    ])
  })

  it('keeps a record one line: control characters and backslashes of the command are escaped', () => {
    const s = setup()
    const siteId = s.site()
    s.audit.begin({ siteId, kind: 'exec', actor: KEY, command: 'printf "a\\n"\nrm -rf x\r\t\x1b[2J\x9b' }).end({ exitCode: 0 })
    const [line] = s.lines(siteId)
    expect(line).toMatch(/ cmd: printf "a\\\\n"\\nrm -rf x\\r\\t\\x1b\[2J\\x9b$/)
    expect(line).not.toMatch(/[\n\r\t\x1b\x9b]/)
  })

  it('keeps the first 4 KiB of a long command, cut on a character, and says so with its whole size', () => {
    const s = setup()
    const siteId = s.site()
    // 'é' is two bytes: 4095 + 2 does not fit in 4096, so the cut falls before it.
    const command = 'x'.repeat(AUDIT_COMMAND_BYTES - 1) + 'é'.repeat(3000)
    s.audit.begin({ siteId, kind: 'exec', actor: KEY, command }).end({ exitCode: 0 })
    const [line] = s.lines(siteId)
    expect(line).toContain(` cmd[first 4095 of ${4095 + 6000} bytes]: ${'x'.repeat(4095)}`)
    expect(line!.endsWith('x')).toBe(true)
    // Exactly 4 KiB is whole, and has no mark.
    s.audit.begin({ siteId, kind: 'exec', actor: KEY, command: 'y'.repeat(AUDIT_COMMAND_BYTES) }).end({ exitCode: 0 })
    expect(s.lines(siteId, 1)[0]).toContain(` cmd: ${'y'.repeat(4096)}`)
  })

  it("answers the newest lines, oldest first, of the site's records only, those containing `search` when given", () => {
    const s = setup()
    const [siteId, other] = [s.site(), s.site()]
    s.audit.begin({ siteId: other, kind: 'exec', actor: KEY, command: 'echo from another site' }).end({ exitCode: 0 })
    // More than a page of the store (500), so the search goes on past the first.
    fill(s, siteId, 1203)
    const last3 = s.lines(siteId, 3)
    expect(last3.map((l) => l.split(' cmd: ')[1])).toEqual(['echo 1200', 'echo 1201', 'echo 1202'])
    expect(last3.map((l) => Date.parse(l.split(' ')[0]!))).toEqual([...last3.map((l) => Date.parse(l.split(' ')[0]!))].sort())
    expect(s.lines(siteId, 500)).toHaveLength(500)
    expect(s.lines(siteId, 500)[0]).toMatch(/ cmd: echo 703$/)
    // Matches spread over all pages: 'echo 1' then a digit and the end: 10..19, 100..199, 1000..1202 (newest 5).
    const matches = s.lines(siteId, 5, 'cmd: echo 11')
    expect(matches.map((l) => l.split(' cmd: ')[1])).toEqual(['echo 1195', 'echo 1196', 'echo 1197', 'echo 1198', 'echo 1199'])
    expect(s.lines(siteId, 500, 'echo 11')).toHaveLength(1 + 10 + 100)
    expect(s.lines(siteId, 500, 'another site')).toEqual([])
    expect(s.lines(other, 500)).toHaveLength(1)
    expect(s.lines(s.site(), 500)).toEqual([])
  })

  it('orders records started in the same millisecond as they were written', () => {
    const s = setup()
    const siteId = s.site()
    for (const n of [1, 2, 3]) s.audit.begin({ siteId, kind: 'exec', actor: KEY, command: `echo ${n}` }).end({ exitCode: 0 })
    expect(s.lines(siteId, 2).map((l) => l.split(' cmd: ')[1])).toEqual(['echo 2', 'echo 3'])
  })

  it(`keeps records ${AUDIT_RETENTION_DAYS} days, pruned by maintenance at most hourly`, () => {
    const s = setup()
    const siteId = s.site()
    s.audit.begin({ siteId, kind: 'exec', actor: KEY, command: 'old' }).end({ exitCode: 0 })
    s.t.clock.advance(10 * DAY)
    s.audit.begin({ siteId, kind: 'exec', actor: KEY, command: 'newer' })
    // Half an hour before the first is 90 days old: a pass, which keeps both.
    s.t.clock.advance((AUDIT_RETENTION_DAYS - 10) * DAY - 1_800_000)
    s.audit.prune()
    expect(s.lines(siteId)).toHaveLength(2)
    // A minute past its 90 days, but within the hour of the last pass: nothing yet.
    s.t.clock.advance(1_860_000)
    s.audit.prune()
    expect(s.lines(siteId)).toHaveLength(2)
    s.t.clock.advance(1_800_000)
    s.audit.prune()
    // The old one went; the newer one, open, stays until it is as old.
    expect(s.lines(siteId)).toEqual([expect.stringMatching(/ open cmd: newer$/)])
    expect(s.t.logged('audit records pruned')).toBe(true)
  })

  it('keeps at most the newest records of each site, whatever their age', () => {
    const s = setup({ days: AUDIT_RETENTION_DAYS, perSite: 10 })
    const [busy, quiet] = [s.site(), s.site()]
    fill(s, busy, 25)
    fill(s, quiet, 4)
    s.audit.prune()
    expect(s.lines(busy, 500).map((l) => l.split(' cmd: ')[1])).toEqual(Array.from({ length: 10 }, (_, i) => `echo ${15 + i}`))
    expect(s.lines(quiet, 500)).toHaveLength(4)
  })

  it("removes a reaped site's records with its data, and no other site's", async () => {
    const s = setup()
    const [gone, kept] = [s.site(), s.site()]
    fill(s, gone, 3)
    fill(s, kept, 2)
    await s.audit.removeAllFor(gone)
    await s.audit.removeAllFor(gone)
    expect(s.lines(gone)).toEqual([])
    expect(s.lines(kept)).toHaveLength(2)
  })

  it('marks the open execs and console sessions an earlier process left as over, and leaves a shell (another process) open', () => {
    const s = setup()
    const siteId = s.site()
    s.audit.begin({ siteId, kind: 'exec', actor: KEY, command: 'sleep 100' })
    s.audit.begin({ siteId, kind: 'console', actor: KEY, command: null })
    s.audit.begin({ siteId, kind: 'shell', actor: ADMIN, command: null })
    s.audit.begin({ siteId, kind: 'exec', actor: KEY, command: 'true' }).end({ exitCode: 0 })
    s.t.clock.advance(1)
    expect(s.audit.markLost(['exec', 'console'], s.t.clock.now(), 'berth stopped before it ended')).toBe(2)
    expect(s.lines(siteId).map((l) => l.split(' ').slice(1).join(' '))).toEqual([
      'exec key=svc_ab12cd34 open reason="berth stopped before it ended" cmd: sleep 100',
      'console key=svc_ab12cd34 open reason="berth stopped before it ended"',
      'shell admin=alice open',
      'exec key=svc_ab12cd34 exit=0 duration_ms=0 cmd: true',
    ])
  })
})
