import * as x509 from '@peculiar/x509'
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

/**
 * certificate.issued and certificate.renewal_failed (issue 41), with the manager's setup of
 * manager.test.ts (a real SQLite store, a CA double signing real certificates or failing as told):
 * recorded in the certificate's write, for the account whose site or domain it is.
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

interface Options { wildcard?: boolean; apiHost?: string | null; issuer?: boolean }

function setup(o: Options = {}) {
  const t = domainStore()
  const accountId = t.account(null)
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
    events: { log, owner: (subject) => (subject === 'site:s1' ? { accountId, siteId: 's1', siteSlug: 'acme' } : null) },
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

describe('certificate events', () => {
  it('certificate.issued for a site\'s certificate, then certificate.renewal_failed when renewing the one served fails', async () => {
    const t = setup()
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
    const t = setup()
    t.source.sites.push({ id: 's1', slug: 'acme' })
    t.ca.fail = new IssueError('refused', 'rejectedIdentifier')
    expect(await t.issue('site:s1')).toMatchObject({ status: 'failed' })
    t.ca.fail = null
    await t.issue('api')
    expect(t.events()).toEqual([])
  })
})
