import { X509Certificate } from 'node:crypto'
import { mkdtempSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPebble, type Pebble } from '../../../test/helpers/pebble'
import { startDnsServer, type RunningDnsServer } from '../../dns/server'
import type { Authority, DnsRecord } from '../../dns/types'
import { memoryLogger } from '../../lib/logger'
import { AcmeIssuer } from './acme'
import { IssueError, type ChallengeSolver } from './types'

/**
 * The ACME issuer against Pebble (Let's Encrypt's test CA): HTTP-01 answered by a small server on
 * the port Pebble checks, DNS-01 by Berth's DNS server, which Pebble uses as its resolver.
 */
const APEX = 'acme.test'
const txt = new Map<string, string[]>()
const SOA: DnsRecord & { type: 'SOA' } = { name: APEX, type: 'SOA', ttl: 60, data: { mname: `ns1.${APEX}`, rname: `hostmaster.${APEX}`, serial: 1, refresh: 60, retry: 60, expire: 600, minimum: 1 } }
const authority: Authority = {
  zoneFor: (name) => (name === APEX || name.endsWith(`.${APEX}`) ? {
    apex: APEX, soa: SOA,
    lookup: (n) => {
      const records: DnsRecord[] = n.startsWith('_acme-challenge.') ? (txt.get(n.slice('_acme-challenge.'.length)) ?? []).map((v) => ({ name: n, type: 'TXT', ttl: 1, data: [v] })) : []
      if (n.startsWith('elsewhere.')) return [{ name: n, type: 'A', ttl: 60, data: '192.0.2.1' }]
      return [...records, { name: n, type: 'A', ttl: 60, data: '127.0.0.1' }]
    },
  } : null),
}
const tokens = new Map<string, string>()
const solver: ChallengeSolver = {
  addHttp: (t, k) => tokens.set(t, k),
  removeHttp: (t) => tokens.delete(t),
  addTxt: (name, value) => txt.set(name, [...(txt.get(name) ?? []), value]),
  removeTxt: (name, value) => {
    const left = (txt.get(name) ?? []).filter((v) => v !== value)
    if (left.length) txt.set(name, left)
    else txt.delete(name)
  },
}

let pebble: Pebble
let dns: RunningDnsServer
let http: ReturnType<typeof Bun.serve>
let issuer: AcmeIssuer
const dir = mkdtempSync(join(tmpdir(), 'berth-acme-'))

beforeAll(async () => {
  http = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req) => new Response(tokens.get(new URL(req.url).pathname.split('/').pop()!) ?? 'no', { status: tokens.has(new URL(req.url).pathname.split('/').pop()!) ? 200 : 404 }) })
  dns = await startDnsServer({ authority, hostname: '127.0.0.1', port: 0, log: memoryLogger() })
  pebble = await startPebble({ httpPort: http.port!, dnsServer: `127.0.0.1:${dns.port}` })
  issuer = new AcmeIssuer({ directoryUrl: pebble.directoryUrl, email: 'hoster@example.com', termsAgreed: true, eab: null, caBundle: pebble.caBundle, dir, log: memoryLogger() })
}, 30_000)
afterAll(async () => {
  await pebble?.stop()
  await dns?.stop()
  await http?.stop(true)
})

describe('the ACME issuer against Pebble', () => {
  it('gets a certificate for a name by HTTP-01, chained to the CA, key and account kept private', async () => {
    const cert = await issuer.issue({ names: [`shop.${APEX}`], challenge: 'http-01', solver })
    const leaf = new X509Certificate(cert.certPem)
    expect(leaf.subjectAltName).toBe(`DNS:shop.${APEX}`)
    expect(cert.notAfter).toBeGreaterThan(Date.now())
    expect(cert.serial).toMatch(/^[0-9A-F]+$/)
    expect(leaf.checkPrivateKey((await import('node:crypto')).createPrivateKey(cert.keyPem))).toBe(true)
    expect(leaf.verify(new X509Certificate(cert.certPem.split(/(?=-----BEGIN CERTIFICATE-----)/)[1]!).publicKey)).toBe(true)
    expect(tokens.size).toBe(0)
    expect(statSync(join(dir, 'account.key')).mode & 0o777).toBe(0o600)
  })

  it('gets a wildcard with its base name by DNS-01 through Berth\'s DNS', async () => {
    const cert = await issuer.issue({ names: [`*.${APEX}`, APEX], challenge: 'dns-01', solver })
    expect(new X509Certificate(cert.certPem).subjectAltName).toContain(`DNS:*.${APEX}`)
    expect(txt.size).toBe(0)
  })

  it('reports a refused order as refused, with the CA\'s reason', async () => {
    // Nothing answers HTTP-01 for this name: its address is not this box.
    const err = await issuer.issue({ names: [`elsewhere.${APEX}`], challenge: 'http-01', solver }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(IssueError)
    expect((err as IssueError).kind).toBe('refused')
  }, 30_000)
})
