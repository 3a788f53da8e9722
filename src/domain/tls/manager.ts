import { createPrivateKey, X509Certificate } from 'node:crypto'
import { IssueError, type CertificateIssuer, type ChallengeType } from '../../drivers/certs/types'
import { iso, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { CertificateRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { CertificateFiles } from './certificate-files'
import type { ChallengeBook } from './challenges'
import type { Preflight } from '../../drivers/certs/preflight'
import type { CertificatesRepository } from './repository'
import { NO_TLS, type TlsView } from './views'
import type { EventLog } from '../events'

export const ISSUE_CERTIFICATE_JOB = 'issue_certificate'

const HOUR_MS = 3_600_000
const BACKOFF_MAX_MS = 24 * HOUR_MS
const SYNC_MS = 2_000

/** A certificate as the HTTPS listener takes it. */
export interface ServedCertificate {
  id: string
  names: string[]
  cert: string
  key: string
}

interface Wanted {
  subject: string
  names: string[]
  challenge: ChallengeType
}

interface Deps {
  store: Store
  clock: Clock
  log: Logger
  repo: CertificatesRepository
  /** null when no CA is configured: nothing is wanted and every view says `none`. */
  issuer: CertificateIssuer | null
  challenges: ChallengeBook
  preflight: Preflight
  jobs: { enqueue(kind: string, subjectId: string): unknown; pendingOf(subjectId: string, kinds: readonly string[]): string | null; kick(): void }
  /** Where certificates and keys are kept (`{data_dir}/tls/certs`, drivers/certs/files.ts). */
  files: CertificateFiles
  served: ServedNames
  /**
   * The event log (domain/events): `certificate.issued` and `certificate.renewal_failed`, in the
   * certificate's write. `owner` says whose a certificate is (`site:{id}`, `domain:{id}`); the
   * box's own (wildcard, api) tell no account.
   */
  events?: { log: Pick<EventLog, 'record'>; owner(subject: string): { accountId: string; siteId: string | null; siteSlug: string | null } | null }
}

/** The names Berth serves, each of which wants a certificate. */
export interface ServedNames {
  sitesDomain: string
  /**
   * The API's own host name (site_url's), or null when it is an address or localhost. It may be
   * `sitesDomain` itself or a name under it: it gets a certificate of its own unless the wildcard's covers it.
   */
  apiHost: string | null
  /** One wildcard certificate (DNS-01) for every site name, instead of one per site (HTTP-01). */
  wildcard: boolean
  /** The sites, and the domains with the site each is linked to. */
  sources: () => { sites: { id: string; slug: string }[]; domains: { id: string; name: string; siteId: string | null }[] }
}

/**
 * Certificates for every name Berth serves (design.md, Certificates): it works out which are
 * wanted (each site name, or one wildcard; each linked domain with its www; the API's host),
 * checks that a name points here before ordering, orders in a job (a request never waits for a
 * CA), renews at the CA's ARI window or two thirds of the lifetime, backs off 1 h doubling to 24 h
 * on failure, and keeps serving the old certificate until a new one is in. Files are 0600.
 */
export class CertificateManager {
  private timer: ReturnType<typeof setInterval> | undefined
  private loaded = new Map<string, ServedCertificate & { serial: string }>()
  private listeners: (() => void)[] = []
  private failedOrders = 0

  constructor(private d: Deps) {}

  /** Calls `fn` whenever what is served changes (a certificate issued, renewed, removed or found broken). */
  subscribe(fn: () => void): void {
    this.listeners.push(fn)
  }

  private changed(): void {
    for (const fn of this.listeners) fn()
  }

  get enabled(): boolean {
    return this.d.issuer !== null
  }

  start(): void {
    if (!this.enabled) return
    this.tick()
    this.timer = setInterval(() => this.tick(), SYNC_MS)
    this.timer.unref?.()
  }

  stop(): void {
    clearInterval(this.timer)
  }

  /** Brings the rows in line with what is wanted, and queues what is due. */
  tick(): void {
    try {
      this.sync()
      this.queueDue()
    } catch (err) {
      this.d.log.error('certificate bookkeeping failed', { error: (err as Error).message })
    }
  }

  wanted(): Wanted[] {
    const { sites, domains } = this.d.served.sources()
    const out: Wanted[] = []
    const base = this.d.served.sitesDomain
    const wildcardNames = [`*.${base}`, base]
    if (this.d.served.wildcard) out.push({ subject: 'wildcard', names: wildcardNames, challenge: 'dns-01' })
    else for (const s of sites) out.push({ subject: `site:${s.id}`, names: [`${s.slug}.${base}`], challenge: 'http-01' })
    for (const d of domains) if (d.siteId) out.push({ subject: `domain:${d.id}`, names: [d.name, `www.${d.name}`], challenge: 'http-01' })
    const api = this.d.served.apiHost
    // Without the wildcard, nothing else covers the API's host, even when it is sites_domain itself.
    if (api && !(this.d.served.wildcard && wildcardNames.some((n) => nameCovers(n, api)))) out.push({ subject: 'api', names: [api], challenge: 'http-01' })
    return out
  }

  sync(): void {
    if (!this.enabled) return
    const wanted = new Map(this.wanted().map((w) => [w.subject, w]))
    const now = this.d.clock.now()
    let servedChanged = false
    this.d.store.write(() => {
      for (const row of this.d.repo.all()) {
        const want = wanted.get(row.subject)
        if (!want) {
          this.d.repo.remove(row.id)
          servedChanged ||= this.removeFiles(row.id)
          continue
        }
        wanted.delete(row.subject)
        if (JSON.stringify(want.names) !== row.names) {
          this.d.repo.update(row.id, { names: JSON.stringify(want.names), challenge: want.challenge, nextAttemptAt: now, failures: 0, updatedAt: now })
        }
      }
      for (const w of wanted.values()) {
        this.d.repo.insert({
          id: crypto.randomUUID(), subject: w.subject, names: JSON.stringify(w.names), challenge: w.challenge, status: 'pending', serial: null, notBefore: null, notAfter: null,
          renewAt: null, lastError: null, failures: 0, nextAttemptAt: now, createdAt: now, updatedAt: now,
        })
      }
    })
    if (servedChanged) this.changed()
  }

  private queueDue(): void {
    let queued = false
    for (const row of this.d.repo.due(this.d.clock.now())) {
      if (this.d.jobs.pendingOf(row.id, [ISSUE_CERTIFICATE_JOB])) continue
      this.d.store.write(() => this.d.jobs.enqueue(ISSUE_CERTIFICATE_JOB, row.id))
      queued = true
    }
    if (queued) this.d.jobs.kick()
  }

  /** The job: pre-flight, order, store, serve. Never throws: failures are recorded on the row. */
  async issue(id: string): Promise<void> {
    const row = this.d.repo.find(id)
    if (!row || !this.d.issuer) return
    const names = JSON.parse(row.names) as string[]
    const now = this.d.clock.now()
    const serving = row.notAfter !== null && row.notAfter > now && this.d.files.has(id)
    this.d.store.write(() => this.d.repo.update(id, { status: serving ? 'renewing' : 'pending', updatedAt: now }))
    const problem = row.challenge === 'dns-01' ? await this.d.preflight.delegatedHere(this.d.served.sitesDomain) : await firstProblem(names, (n) => this.d.preflight.pointsHere(n))
    if (problem) return this.fail(row, serving, `Not ordered: ${problem}.`, null)
    try {
      const cert = await this.d.issuer.issue({ names, challenge: row.challenge, solver: this.d.challenges })
      this.d.files.write(id, { cert: cert.certPem, key: cert.keyPem })
      const window = await this.d.issuer.renewalWindow(cert.certPem)
      const renewAt = window ? window.start + Math.random() * Math.max(0, window.end - window.start) : cert.notBefore + ((cert.notAfter - cert.notBefore) * 2) / 3
      this.d.store.write(() => {
        this.d.repo.update(id, {
          status: 'active', serial: cert.serial, notBefore: cert.notBefore, notAfter: cert.notAfter, renewAt, lastError: null, failures: 0,
          nextAttemptAt: Math.floor(renewAt), updatedAt: this.d.clock.now(),
        })
        this.record('certificate.issued', id, serving)
      })
      this.d.log.info(serving ? 'certificate renewed' : 'certificate issued', { names, serial: cert.serial, not_after: new Date(cert.notAfter).toISOString(), renew_at: new Date(renewAt).toISOString() })
      this.changed()
    } catch (err) {
      const e = err instanceof IssueError ? err : new IssueError('refused', (err as Error).message)
      const reason = e.kind === 'rate_limited' ? `The CA's rate limit was reached: ${e.message}` : e.kind === 'unreachable' ? `The CA could not be reached: ${e.message}` : `The CA refused the order: ${e.message}`
      this.fail(row, serving, reason, e.retryAt)
    }
  }

  /** Records a certificate's event with its view (the tls of the site or domain), in the caller's write. */
  private record(type: 'certificate.issued' | 'certificate.renewal_failed', id: string, renewal: boolean, extra: Record<string, unknown> = {}): void {
    const row = this.d.events && this.d.repo.find(id)
    const owner = row && this.d.events!.owner(row.subject)
    if (!row || !owner) return
    const data = { status: row.status, names: JSON.parse(row.names) as string[], not_after: row.notAfter === null ? null : iso(row.notAfter), last_error: row.lastError, renewal, ...extra }
    this.d.events!.log.record({ type, accountId: owner.accountId, siteId: owner.siteId, siteSlug: owner.siteSlug, data })
  }

  /** Orders (first issue or renewal) that failed since start, for /metrics. */
  orderFailures(): number {
    return this.failedOrders
  }

  private fail(row: CertificateRow, serving: boolean, reason: string, retryAt: number | null): void {
    this.failedOrders++
    const now = this.d.clock.now()
    const failures = row.failures + 1
    const backoff = Math.min(HOUR_MS * 2 ** (failures - 1), BACKOFF_MAX_MS)
    const next = Math.max(now + backoff, retryAt ?? 0)
    this.d.store.write(() => {
      this.d.repo.update(row.id, { status: serving ? 'renewing' : 'failed', lastError: reason, failures, nextAttemptAt: next, updatedAt: now })
      // A first order that fails is the site's or domain's tls status (failed); a renewal that fails is news: the one served expires.
      if (serving) this.record('certificate.renewal_failed', row.id, true, { next_attempt_at: iso(next) })
    })
    this.d.log.warn('certificate not obtained', { names: JSON.parse(row.names), error: reason, failures, retry_at: new Date(next).toISOString(), still_serving: serving })
  }

  /**
   * The certificates to serve, read from disk and checked: a file that is not a valid certificate
   * and key pair is reported on its row (and a new one queued), never handed to the listener.
   */
  served(): ServedCertificate[] {
    const out: ServedCertificate[] = []
    const now = this.d.clock.now()
    for (const row of this.d.repo.all()) {
      if (row.serial === null || row.notAfter === null || row.notAfter <= now || !this.d.files.has(row.id)) continue
      const kept = this.loaded.get(row.id)
      if (kept && kept.serial === row.serial) {
        out.push(kept)
        continue
      }
      try {
        const { cert, key } = this.d.files.read(row.id)
        const leaf = new X509Certificate(cert)
        if (!leaf.checkPrivateKey(createPrivateKey(key))) throw new Error('the key does not match the certificate')
        const entry = { id: row.id, names: JSON.parse(row.names) as string[], cert, key, serial: row.serial }
        this.loaded.set(row.id, entry)
        out.push(entry)
      } catch (err) {
        const reason = `The certificate file ${this.d.files.where(row.id)} is not valid (${(err as Error).message}); it is not served and a new one is being obtained.`
        this.d.log.error('certificate file not valid', { names: JSON.parse(row.names), error: (err as Error).message })
        this.d.store.write(() => this.d.repo.update(row.id, { status: 'failed', serial: null, notAfter: null, lastError: reason, nextAttemptAt: now, updatedAt: now }))
      }
    }
    return out
  }

  /** True when `host` has a certificate being served (plain HTTP then redirects to HTTPS). */
  covers(host: string, served: ServedCertificate[]): boolean {
    return served.some((c) => c.names.some((n) => nameCovers(n, host)))
  }

  /** The `tls` of sites' views by site id, in one read: each site's certificate, or the wildcard. */
  forSites(siteIds: string[]): Map<string, TlsView> {
    // Without HTTPS every view says NO_TLS, which is what an absent site means.
    if (!this.enabled) return new Map()
    if (this.d.served.wildcard) {
      const wildcard = this.views(['wildcard']).get('wildcard') ?? NO_TLS
      return new Map(siteIds.map((id) => [id, wildcard]))
    }
    const bySubject = this.views(siteIds.map((id) => `site:${id}`))
    return new Map(siteIds.map((id) => [id, bySubject.get(`site:${id}`) ?? NO_TLS]))
  }

  /** The `tls` of domains' views by domain id, in one read (none while a domain is not linked to a site). */
  forDomains(domainIds: string[]): Map<string, TlsView> {
    const bySubject = this.views(domainIds.map((id) => `domain:${id}`))
    return new Map(domainIds.map((id) => [id, bySubject.get(`domain:${id}`) ?? NO_TLS]))
  }

  /** The views of the subjects that have a certificate row, by subject. */
  private views(subjects: string[]): Map<string, TlsView> {
    if (!this.enabled) return new Map()
    return new Map(this.d.repo.bySubjects(subjects).map((row) => [row.subject, {
      status: row.status,
      names: JSON.parse(row.names) as string[],
      not_after: row.notAfter === null ? null : iso(row.notAfter),
      last_error: row.lastError,
    }]))
  }

  private removeFiles(id: string): boolean {
    this.loaded.delete(id)
    return this.d.files.remove(id)
  }
}

async function firstProblem(names: string[], check: (name: string) => Promise<string | null>): Promise<string | null> {
  for (const name of names) {
    const problem = await check(name)
    if (problem) return problem
  }
  return null
}

/** True when a certificate's name `n` covers `host`: the same name, or a wildcard one label above it. */
function nameCovers(n: string, host: string): boolean {
  return n === host || (n.startsWith('*.') && host.endsWith(n.slice(1)) && !host.slice(0, -n.length + 1).includes('.'))
}
