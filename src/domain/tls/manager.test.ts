import * as x509 from '@peculiar/x509'
import { existsSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { domainStore } from '../../../test/helpers/domain-store'
import { CertificateFolder } from '../../drivers/certs/files'
import { IssueError, type CertificateIssuer, type ChallengeType } from '../../drivers/certs/types'
import { EventLog } from '../events'
import { ChallengeBook } from './challenges'
import { CertificateManager, ISSUE_CERTIFICATE_JOB } from './manager'
import type { Preflight } from '../../drivers/certs/preflight'
import { CertificatesRepository } from './repository'
import { NO_TLS } from './views'

/**
 * Which names get certificates and when, on a real SQLite store and a temporary certificate
 * folder. The CA is a double that signs real (self-signed) certificates or fails as told; the
 * DNS pre-flight is a double answering per name; the job queue records what is queued.
 */
const HOUR = 3600_000
const DAY = 24 * HOUR
/** A key pair and a self-signed certificate for `names`, as PEM. */
async function selfSigned(names: string[]): Promise<{ certPem: string; keyPem: string }> {
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' }
  const keys = await crypto.subtle.generateKey(alg, true, ['sign', 'verify'])
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01', name: `CN=${names[0]}`, notBefore: new Date(Date.now() - DAY), notAfter: new Date(Date.now() + 90 * DAY), keys, signingAlgorithm: alg,
    extensions: [new x509.SubjectAlternativeNameExtension(names.map((value) => ({ type: 'dns' as const, value })))],
  })
  const der = Buffer.from(await crypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64')
  return { certPem: cert.toString('pem'), keyPem: `-----BEGIN PRIVATE KEY-----\n${der.match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n` }
}

/** `events`: the manager records its events (issue 41), site s1's certificate being an account's. */
interface Options { wildcard?: boolean; apiHost?: string | null; issuer?: boolean; events?: boolean }

function setup(o: Options = {}) {
  const t = domainStore()
  const accountId = o.events ? t.account(null) : ''
  const log = new EventLog({ store: t.store, clock: t.clock, log: t.log })
  const source = { sites: [] as { id: string; slug: string }[], domains: [] as { id: string; name: string; siteId: string | null }[] }
  const orders: { names: string[]; challenge: ChallengeType }[] = []
  const ca = { fail: null as IssueError | null, window: null as { start: number; end: number } | null, serial: 0 }
  const issuer: CertificateIssuer = {
    name: 'acme',
    async issue({ names, challenge }) {
      orders.push({ names, challenge })
      if (ca.fail) throw ca.fail
      const now = t.clock.now()
      return { ...(await selfSigned(names)), notBefore: now, notAfter: now + 90 * DAY, serial: `0${++ca.serial}` }
    },
    async renewalWindow() {
      return ca.window
    },
  }
  /** Names whose DNS does not point here, with why; `zone` for the wildcard's delegation. */
  const pointsElsewhere = new Map<string, string>()
  const preflight = {
    pointsHere: async (name: string) => pointsElsewhere.get(name) ?? null,
    delegatedHere: async (zone: string) => pointsElsewhere.get(zone) ?? null,
  } as unknown as Preflight
  const queued: string[] = []
  const pending = new Set<string>()
  let kicks = 0
  const repo = new CertificatesRepository(t.store)
  const dir = join(t.dir, 'tls', 'certs')
  const manager = new CertificateManager({
    store: t.store, clock: t.clock, log: t.log, repo, issuer: o.issuer === false ? null : issuer, challenges: new ChallengeBook(), preflight, files: new CertificateFolder(dir),
    jobs: { enqueue: (kind: string, id: string) => void queued.push(kind === ISSUE_CERTIFICATE_JOB ? id : `${kind}?`), pendingOf: (id: string) => (pending.has(id) ? 'job' : null), kick: () => void kicks++ },
    served: { sitesDomain: 'sites.test', apiHost: o.apiHost === undefined ? 'api.test' : o.apiHost, wildcard: o.wildcard ?? false, sources: () => source },
    ...(o.events ? { events: { log, owner: (subject: string) => (subject === 'site:s1' ? { accountId, siteId: 's1', siteSlug: 'acme' } : null) } } : {}),
  })
  let changes = 0
  manager.subscribe(() => void changes++)
  const row = (subject: string) => repo.all().find((r) => r.subject === subject)!
  /** Syncs, then runs the issue job of `subject`. */
  async function issue(subject: string) {
    manager.sync()
    await manager.issue(row(subject).id)
    return row(subject)
  }
  return { ...t, accountId, events: () => log.list({ accountId, limit: 100 }).map((e) => ({ type: e.type, site: e.siteSlug, data: JSON.parse(e.data) })), source, orders, ca, pointsElsewhere, queued, pending, kicks: () => kicks, repo, dir, manager, changes: () => changes, row, issue }
}

describe('which names get certificates', () => {
  it('one per site name, one per linked domain with its www, one for the API host; none for an unlinked domain', () => {
    const t = setup()
    t.source.sites.push({ id: 's1', slug: 'acme' })
    t.source.domains.push({ id: 'd1', name: 'acme.com', siteId: 's1' }, { id: 'd2', name: 'idle.com', siteId: null })
    expect(t.manager.wanted()).toEqual([
      { subject: 'site:s1', names: ['acme.sites.test'], challenge: 'http-01' },
      { subject: 'domain:d1', names: ['acme.com', 'www.acme.com'], challenge: 'http-01' },
      { subject: 'api', names: ['api.test'], challenge: 'http-01' },
    ])
  })

  it('with a wildcard: one certificate for every site name and the base, by DNS-01, and no per-site ones', () => {
    const t = setup({ wildcard: true, apiHost: null })
    t.source.sites.push({ id: 's1', slug: 'acme' }, { id: 's2', slug: 'beta' })
    expect(t.manager.wanted()).toEqual([{ subject: 'wildcard', names: ['*.sites.test', 'sites.test'], challenge: 'dns-01' }])
  })

  it("gets the API's host a certificate when it is sites_domain itself, unless the wildcard's covers it", () => {
    const apiOf = (o: Options) => setup(o).manager.wanted().filter((w) => w.subject === 'api')
    expect(apiOf({ apiHost: 'sites.test' })).toEqual([{ subject: 'api', names: ['sites.test'], challenge: 'http-01' }])
    expect(apiOf({ apiHost: 'sites.test', wildcard: true })).toEqual([])
    expect(apiOf({ apiHost: 'panel.sites.test', wildcard: true })).toEqual([])
    expect(apiOf({ apiHost: 'api.test', wildcard: true })).toEqual([{ subject: 'api', names: ['api.test'], challenge: 'http-01' }])
  })

  it('without a CA nothing is wanted, recorded or queued, and every view says none', () => {
    const t = setup({ issuer: false })
    t.source.sites.push({ id: 's1', slug: 'acme' })
    t.manager.tick()
    expect(t.manager.enabled).toBe(false)
    expect(t.repo.all()).toEqual([])
    expect(t.queued).toEqual([])
    expect(t.manager.forSites(['s1']).get('s1') ?? NO_TLS).toEqual(NO_TLS)
  })

  it('records each wanted name pending and queues its order once; a name no longer wanted is dropped with its files', async () => {
    const t = setup({ apiHost: null })
    t.source.sites.push({ id: 's1', slug: 'acme' })
    t.manager.tick()
    const id = t.row('site:s1').id
    expect(t.row('site:s1')).toMatchObject({ status: 'pending', names: '["acme.sites.test"]', nextAttemptAt: t.clock.now() })
    expect(t.manager.forSites(['s1']).get('s1')).toEqual({ status: 'pending', names: ['acme.sites.test'], not_after: null, last_error: null })
    expect(t.queued).toEqual([id])
    expect(t.kicks()).toBe(1)
    t.pending.add(id)
    t.manager.tick()
    expect(t.queued).toEqual([id])
    await t.manager.issue(id)
    expect(existsSync(join(t.dir, `${id}.crt`))).toBe(true)
    const before = t.changes()
    t.source.sites.length = 0
    t.manager.tick()
    expect(t.repo.all()).toEqual([])
    expect(existsSync(join(t.dir, `${id}.crt`))).toBe(false)
    expect(existsSync(join(t.dir, `${id}.key`))).toBe(false)
    expect(t.changes()).toBe(before + 1)
  })

  it('a domain linked to another site keeps its certificate; a change of names orders again at once', async () => {
    const t = setup({ apiHost: null })
    t.source.domains.push({ id: 'd1', name: 'acme.com', siteId: 's1' })
    const issued = await t.issue('domain:d1')
    t.source.domains[0]!.siteId = 's2'
    t.manager.sync()
    expect(t.row('domain:d1')).toMatchObject({ id: issued.id, status: 'active', serial: issued.serial })
    t.source.domains[0]!.name = 'acme.ca'
    t.manager.sync()
    expect(t.row('domain:d1')).toMatchObject({ id: issued.id, names: '["acme.ca","www.acme.ca"]', nextAttemptAt: t.clock.now(), failures: 0 })
  })
})

describe('ordering and renewal', () => {
  it('issues and serves: private files, active with its dates, renewal at two thirds of the lifetime without ARI', async () => {
    const t = setup()
    const row = await t.issue('api')
    const now = t.clock.now()
    expect(t.orders).toEqual([{ names: ['api.test'], challenge: 'http-01' }])
    expect(row).toMatchObject({ status: 'active', serial: '01', notBefore: now, notAfter: now + 90 * DAY, renewAt: now + 60 * DAY, nextAttemptAt: now + 60 * DAY, lastError: null })
    for (const ext of ['crt', 'key']) expect(statSync(join(t.dir, `${row.id}.${ext}`)).mode & 0o777).toBe(0o600)
    expect(t.changes()).toBe(1)
    const served = t.manager.served()
    expect(served.map((c) => c.names)).toEqual([['api.test']])
    expect(t.manager.covers('api.test', served)).toBe(true)
    expect(t.manager.covers('other.test', served)).toBe(false)
    // Not due again until the renewal time.
    t.clock.set(now + 60 * DAY - 1)
    t.manager.tick()
    expect(t.queued).toEqual([])
    t.clock.set(now + 60 * DAY)
    t.manager.tick()
    expect(t.queued).toEqual([row.id])
  })

  it('renews inside the CA’s ARI window when it gives one', async () => {
    const t = setup()
    const now = t.clock.now()
    t.ca.window = { start: now + 50 * DAY, end: now + 51 * DAY }
    const row = await t.issue('api')
    expect(row.renewAt).toBeGreaterThanOrEqual(now + 50 * DAY)
    expect(row.renewAt).toBeLessThanOrEqual(now + 51 * DAY)
  })

  it('does not order a name that does not point here; backs off 1 h doubling up to 24 h', async () => {
    const t = setup()
    t.pointsElsewhere.set('api.test', 'api.test answers 192.0.2.1, not this server\'s 198.51.100.1')
    let row = await t.issue('api')
    expect(t.orders).toEqual([])
    expect(row).toMatchObject({ status: 'failed', failures: 1, lastError: 'Not ordered: api.test answers 192.0.2.1, not this server\'s 198.51.100.1.', nextAttemptAt: t.clock.now() + HOUR })
    const waits: number[] = []
    for (let i = 0; i < 6; i++) {
      t.clock.set(row.nextAttemptAt)
      row = await t.issue('api')
      waits.push((row.nextAttemptAt - t.clock.now()) / HOUR)
    }
    expect(waits).toEqual([2, 4, 8, 16, 24, 24])
    t.pointsElsewhere.clear()
    t.clock.set(row.nextAttemptAt)
    expect(await t.issue('api')).toMatchObject({ status: 'active', failures: 0, lastError: null })
  })

  it('the wildcard checks its zone’s delegation, not each name', async () => {
    const t = setup({ wildcard: true, apiHost: null })
    t.pointsElsewhere.set('sites.test', 'sites.test is delegated to ns.other.test')
    expect(await t.issue('wildcard')).toMatchObject({ status: 'failed', lastError: 'Not ordered: sites.test is delegated to ns.other.test.' })
    t.pointsElsewhere.clear()
    expect(await t.issue('wildcard')).toMatchObject({ status: 'active' })
    expect(t.orders).toEqual([{ names: ['*.sites.test', 'sites.test'], challenge: 'dns-01' }])
    t.source.sites.push({ id: 's1', slug: 'acme' }, { id: 's2', slug: 'beta' })
    const views = t.manager.forSites(['s1', 's2'])
    expect(views.get('s1')).toMatchObject({ status: 'active', names: ['*.sites.test', 'sites.test'] })
    expect(views.get('s2')).toEqual(views.get('s1'))
    const served = t.manager.served()
    expect(['acme.sites.test', 'sites.test'].map((h) => t.manager.covers(h, served))).toEqual([true, true])
    expect(['a.b.sites.test', 'xsites.test', 'sites.test.evil'].map((h) => t.manager.covers(h, served))).toEqual([false, false, false])
  })

  it('says why the CA failed, waits as long as its rate limit says, and keeps serving the old certificate while renewing', async () => {
    const t = setup()
    const first = await t.issue('api')
    t.clock.set(first.renewAt!)
    const retryAt = t.clock.now() + 3 * DAY
    t.ca.fail = new IssueError('rate_limited', 'too many certificates for api.test', retryAt)
    const renewing = await t.issue('api')
    expect(renewing).toMatchObject({ status: 'renewing', serial: first.serial, failures: 1, nextAttemptAt: retryAt, lastError: 'The CA\'s rate limit was reached: too many certificates for api.test' })
    expect(t.manager.served().map((c) => c.id)).toEqual([first.id])
    t.ca.fail = new IssueError('unreachable', 'connect ECONNREFUSED')
    expect((await t.issue('api')).lastError).toBe('The CA could not be reached: connect ECONNREFUSED')
    t.ca.fail = new IssueError('refused', 'rejectedIdentifier')
    expect((await t.issue('api')).lastError).toBe('The CA refused the order: rejectedIdentifier')
    t.ca.fail = null
    t.clock.advance(DAY)
    expect(await t.issue('api')).toMatchObject({ status: 'active', serial: '02' })
  })

  it('never serves a broken certificate file: the row says why and a new order is due at once', async () => {
    const t = setup()
    const row = await t.issue('api')
    expect(t.manager.served()).toHaveLength(1)
    // Another certificate's key: a pair that does not match (a new serial so the file is read again).
    const other = await selfSigned(['api.test'])
    writeFileSync(join(t.dir, `${row.id}.key`), other.keyPem)
    t.repo.update(row.id, { serial: '99' })
    expect(t.manager.served()).toEqual([])
    expect(t.row('api')).toMatchObject({ status: 'failed', serial: null, notAfter: null, nextAttemptAt: t.clock.now() })
    expect(t.row('api').lastError).toContain('is not valid (the key does not match the certificate)')
    // An expired certificate is not served either.
    const fresh = await t.issue('api')
    t.clock.set(fresh.notAfter!)
    expect(t.manager.served()).toEqual([])
  })

  it('domains show their certificate, and none while they have no row', async () => {
    const t = setup({ apiHost: null })
    t.source.domains.push({ id: 'd1', name: 'acme.com', siteId: 's1' })
    await t.issue('domain:d1')
    const views = t.manager.forDomains(['d1', 'd2'])
    expect(views.get('d1')).toMatchObject({ status: 'active', names: ['acme.com', 'www.acme.com'], last_error: null })
    expect(views.get('d2')).toEqual(NO_TLS)
  })
})

/**
 * certificate.issued and certificate.renewal_failed (issue 41): recorded in the certificate's write,
 * for the account whose site or domain it is.
 */
describe('certificate events', () => {
  it('certificate.issued for a site\'s certificate, then certificate.renewal_failed when renewing the one served fails', async () => {
    const t = setup({ events: true })
    t.source.sites.push({ id: 's1', slug: 'acme' })
    await t.issue('site:s1')
    expect(t.events()).toMatchObject([{ type: 'certificate.issued', site: 'acme', data: { status: 'active', names: ['acme.sites.test'], last_error: null, renewal: false } }])
    t.ca.fail = new IssueError('refused', 'rejectedIdentifier')
    await t.issue('site:s1')
    const events = t.events()
    expect(events.map((e) => e.type)).toEqual(['certificate.issued', 'certificate.renewal_failed'])
    expect(events[1]!.data).toMatchObject({ status: 'renewing', renewal: true, last_error: 'The CA refused the order: rejectedIdentifier' })
    expect(events[1]!.data.next_attempt_at).toEqual(expect.any(String))
    t.ca.fail = null
    await t.issue('site:s1')
    expect(t.events().map((e) => e.type)).toEqual(['certificate.issued', 'certificate.renewal_failed', 'certificate.issued'])
    expect(t.events()[2]!.data).toMatchObject({ renewal: true, status: 'active' })
  })

  it('a first order that fails and the box\'s own certificates (the API host) record nothing', async () => {
    const t = setup({ events: true })
    t.source.sites.push({ id: 's1', slug: 'acme' })
    t.ca.fail = new IssueError('refused', 'rejectedIdentifier')
    expect(await t.issue('site:s1')).toMatchObject({ status: 'failed' })
    t.ca.fail = null
    await t.issue('api')
    expect(t.events()).toEqual([])
  })
})
