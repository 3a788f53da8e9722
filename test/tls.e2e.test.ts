import { spawnSync } from 'bun'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, freePort, startBerth, type Berth } from './helpers/binary'
import { ConsoleClient, openTicket } from './helpers/console'
import { startPebble, type Pebble } from './helpers/pebble'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * HTTPS on the compiled binary with certificates from Pebble, Let's Encrypt's test CA: Pebble
 * resolves names through Berth's own DNS and checks HTTP-01 on Berth's port, as a real CA would
 * through the internet. curl, trusting only Pebble's root, is the client. server.site_url is
 * https on `sites_domain` itself (which Berth's DNS answers), so the API's own host gets a
 * certificate too.
 */
const SITES = 'sites.test'
const CONTACT = { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', phone: '+1.5555551234', address1: '100 King St W', city: 'Toronto', state: 'ON', postal_code: 'M5X 1A9', country: 'CA' }
/** Pebble's certificates live this long here, so renewal (at two thirds) happens within the test. */
const VALIDITY_SECONDS = 45

let pebble: Pebble
let berth: Berth
let tlsPort = 0
let key = ''
let slug = ''
let root = ''
/** Berth's public origin (server.site_url): the API's host on the HTTPS port. */
let siteUrl = ''
const dir = mkdtempSync(join(tmpdir(), 'berth-tls-'))

/** curl over HTTPS to `name` on Berth's TLS port, trusting Pebble's root only. */
function curl(name: string, path = '/', extra: string[] = []): { code: number; body: string; serial: string; error: string } {
  const p = spawnSync(['curl', '-sS', '--max-time', '5', '--cacert', root, '--resolve', `${name}:${tlsPort}:127.0.0.1`, '-w', '\n%{http_code}', '-v', ...extra, `https://${name}:${tlsPort}${path}`])
  const out = p.stdout.toString()
  const cut = out.lastIndexOf('\n')
  const err = p.stderr.toString()
  return { code: Number(out.slice(cut + 1)), body: out.slice(0, cut), serial: servedSerial(name), error: p.exitCode === 0 ? '' : err }
}

/** The serial of the certificate Berth presents for `name` (openssl s_client). */
function servedSerial(name: string): string {
  const p = spawnSync(['sh', '-c', `echo | openssl s_client -connect 127.0.0.1:${tlsPort} -servername ${name} 2>/dev/null | openssl x509 -noout -serial`])
  return p.stdout.toString().trim().replace(/^serial=/, '')
}

async function tlsOf(path: string, want: (tls: { status: string }) => boolean, timeoutMs = 40_000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const res = await api(berth.url, 'GET', path, { key })
    const tls = res.json.data.tls
    if (want(tls)) return tls
    if (Date.now() > deadline) throw new Error(`${path}: tls still ${JSON.stringify(tls)}`)
    await Bun.sleep(200)
  }
}

beforeAll(async () => {
  const [port, dnsPort] = [await freePort(), await freePort()]
  tlsPort = await freePort()
  pebble = await startPebble({ httpPort: port, dnsServer: `127.0.0.1:${dnsPort}`, validitySeconds: VALIDITY_SECONDS })
  siteUrl = `https://${SITES}:${tlsPort}`
  berth = await startBerth({
    port,
    siteUrl,
    env: {
      BERTH_SITES_DOMAIN: SITES, BERTH_DNS_LISTEN: `127.0.0.1:${dnsPort}`, BERTH_TLS_LISTEN: `127.0.0.1:${tlsPort}`,
      BERTH_TLS_ACME_DIRECTORY: pebble.directoryUrl, BERTH_TLS_ACME_EMAIL: 'hoster@example.com', BERTH_TLS_ACME_TERMS_AGREED: 'true',
      BERTH_TLS_CA_BUNDLE: pebble.caBundleFile, BERTH_TLS_PREFLIGHT_RESOLVER: `127.0.0.1:${dnsPort}`, BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour',
    },
  })
  instanceOf(berth)
  root = join(dir, 'root.pem')
  writeFileSync(root, await pebble.rootPem())
  slug = uniqueSlug('tls')
  key = (await buyDirect(berth.url, { slug })).data.api_key
  expect(await waitForSite(berth.url, key, slug)).toBe('active')
}, 120_000)
afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
  await pebble?.stop()
})

describe('HTTPS with certificates from Pebble', () => {
  it('gets a purchased site a certificate by HTTP-01 and serves the site over HTTPS under its name', async () => {
    const tls = await tlsOf(`/sites/${slug}/`, (t) => t.status === 'active')
    expect(tls).toMatchObject({ status: 'active', names: [`${slug}.${SITES}`], last_error: null })
    expect(Date.parse(tls.not_after)).toBeGreaterThan(Date.now())
    const marker = `over-https-${Math.random().toString(36).slice(2)}`
    expect((await api(berth.url, 'POST', `/sites/${slug}/files/write/`, { key, body: { path: 'public/index.html', content: marker } })).status).toBe(200)
    const res = curl(`${slug}.${SITES}`)
    expect(res.error).toBe('')
    expect(res.code).toBe(200)
    expect(res.body).toContain(marker)
  })

  it("serves the console on site_url's host over HTTPS: a wss:// socket that runs a shell, its page with the strict CSP", async () => {
    // The API's own certificate (site_url's host), ordered at start like the site's.
    let status = curl(SITES, '/api/v1/status/')
    for (const deadline = Date.now() + 25_000; status.error !== '' && Date.now() < deadline; status = curl(SITES, '/api/v1/status/')) await Bun.sleep(300)
    expect(status.error, berth.output().slice(-2000)).toBe('')
    expect(status.code).toBe(200)
    const t = await openTicket(berth.url, key, slug)
    expect(t.websocket_url).toBe(`wss://${SITES}:${tlsPort}/console/${t.ticket}/socket`)
    expect(t.page_url).toBe(`${siteUrl}/console/${t.ticket}`)

    const page = curl(SITES, `/console/${t.ticket}`, ['-i'])
    expect(page.error).toBe('')
    expect(page.code).toBe(200)
    const csp = /^content-security-policy: (.*)$/im.exec(page.body)?.[1]?.trim()
    expect(csp).toContain("default-src 'none'")
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain(`connect-src 'self' wss://${SITES}:${tlsPort}`)
    expect(csp).not.toContain('unsafe-inline')

    // The ticket's URL, connected as curl --resolve does: to 127.0.0.1, with its name in SNI and Host.
    const c = new ConsoleClient(t.websocket_url.replace(`//${SITES}:`, '//127.0.0.1:'), '', { tls: { ca: await Bun.file(root).text(), serverName: SITES }, headers: { host: `${SITES}:${tlsPort}` } })
    await c.opened
    c.type('echo $((6*7))\n')
    await c.waitFor(/\r\n42\r\n/)
    c.type('exit 5\n')
    const { control, close } = await c.ending()
    expect(control).toEqual({ type: 'exit', code: 5 })
    expect(close.code).toBe(1000)
  })

  it('redirects plain HTTP for that name to HTTPS, except the ACME challenge path', async () => {
    const plain = await fetch(`${berth.url}/about?x=1`, { headers: { host: `${slug}.${SITES}` }, redirect: 'manual' })
    expect(plain.status).toBe(308)
    expect(plain.headers.get('location')).toBe(`https://${slug}.${SITES}:${tlsPort}/about?x=1`)
    const challenge = await fetch(`${berth.url}/.well-known/acme-challenge/unknown-token`, { headers: { host: `${slug}.${SITES}` }, redirect: 'manual' })
    expect(challenge.status).not.toBe(308)
  })

  it('gets a linked domain (and its www) a certificate of its own', async () => {
    const domain = `tls-${Date.now().toString(36)}.com`
    expect((await api(berth.url, 'POST', '/domains/register/', { key, body: { domain, period: 1, contact: CONTACT } })).status).toBe(201)
    expect((await api(berth.url, 'POST', `/domains/${domain}/link/`, { key, body: { tenant_slug: slug } })).status).toBe(200)
    const tls = await tlsOf(`/domains/${domain}/`, (t) => t.status === 'active')
    expect(tls.names).toEqual([domain, `www.${domain}`])
    for (const name of [domain, `www.${domain}`]) {
      const res = curl(name)
      expect(res.error, name).toBe('')
      expect(res.code, name).toBe(200)
    }
  })

  it("shows failed with the reason for a name whose DNS does not point here, and orders nothing", async () => {
    const domain = `elsewhere-${Date.now().toString(36)}.com`
    expect((await api(berth.url, 'POST', '/domains/register/', { key, body: { domain, period: 1, contact: CONTACT } })).status).toBe(201)
    expect((await api(berth.url, 'POST', `/domains/${domain}/dns/add/`, { key, body: { type: 'A', value: '192.0.2.44' } })).status).toBe(200)
    expect((await api(berth.url, 'POST', `/domains/${domain}/link/`, { key, body: { tenant_slug: slug } })).status).toBe(200)
    const tls = await tlsOf(`/domains/${domain}/`, (t) => t.status === 'failed')
    expect(tls.last_error).toMatch(new RegExp(`${domain.replace('.', '\\.')} answers 192\\.0\\.2\\.44, not this server's 127\\.0\\.0\\.1`))
    expect(curl(domain).error).not.toBe('')
  })

  it('renews before expiry: the next handshake presents the new serial, and no request fails meanwhile', async () => {
    const name = `${slug}.${SITES}`
    await tlsOf(`/sites/${slug}/`, (t) => t.status === 'active')
    const first = servedSerial(name)
    expect(first).toMatch(/^[0-9A-F]+$/)
    const deadline = Date.now() + VALIDITY_SECONDS * 1000
    const failures: string[] = []
    let requests = 0
    let serial = first
    while (serial === first && Date.now() < deadline) {
      const res = curl(name)
      requests++
      if (res.code !== 200) failures.push(`${res.code}: ${res.error.split('\n').slice(-3).join(' ')}`)
      serial = res.serial
      await Bun.sleep(250)
    }
    expect(serial).not.toBe(first)
    expect(requests).toBeGreaterThan(10)
    expect(failures).toEqual([])
    const tls = await tlsOf(`/sites/${slug}/`, (t) => t.status === 'active')
    expect(tls.last_error).toBeNull()
  }, 90_000)
})

describe('a damaged certificate file', () => {
  it('is reported and not served after a restart, the listener keeps serving the others, and a new one is obtained', async () => {
    const name = `${slug}.${SITES}`
    await tlsOf(`/sites/${slug}/`, (t) => t.status === 'active')
    // The linked domain's certificate (45 s of validity) may be renewing right now: wait until it is active.
    let healthy: string | undefined
    for (const deadline = Date.now() + 40_000; healthy === undefined && Date.now() < deadline; await Bun.sleep(200)) {
      const domains = (await api(berth.url, 'GET', '/domains/', { key })).json.data as { domain: string; tls: { status: string } }[]
      healthy = domains.find((d) => d.tls.status === 'active')?.domain
    }
    if (healthy === undefined) throw new Error('no linked domain with an active certificate within 40 s')
    const db = new (await import('bun:sqlite')).Database(join(berth.dataDir, 'berth.db'), { readonly: true })
    const row = db.query("SELECT id FROM certificates WHERE subject LIKE 'site:%'").get() as { id: string }
    db.close()
    await berth.stop()
    writeFileSync(join(berth.dataDir, 'tls', 'certs', `${row.id}.crt`), '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n')
    await berth.restart()
    const broken = (await api(berth.url, 'GET', `/sites/${slug}/`, { key })).json.data.tls
    expect(broken.status === 'failed' || broken.status === 'pending').toBe(true)
    expect(berth.output()).toMatch(/certificate file not valid/)
    expect(curl(healthy!).code).toBe(200)
    // The pre-flight passes, so a new certificate comes and is served.
    await tlsOf(`/sites/${slug}/`, (t) => t.status === 'active')
    expect(curl(name).code).toBe(200)
  }, 100_000)
})

describe('the wildcard of sites_domain by DNS-01', () => {
  let wildPebble: Pebble
  let wild: Berth
  let wildTls = 0
  let wildRoot = ''
  beforeAll(async () => {
    const [port, dnsPort] = [await freePort(), await freePort()]
    wildTls = await freePort()
    wildPebble = await startPebble({ httpPort: port, dnsServer: `127.0.0.1:${dnsPort}` })
    wild = await startBerth({
      port,
      env: {
        BERTH_SITES_DOMAIN: 'wild.test', BERTH_DNS_LISTEN: `127.0.0.1:${dnsPort}`, BERTH_TLS_LISTEN: `127.0.0.1:${wildTls}`, BERTH_TLS_WILDCARD: 'true',
        BERTH_TLS_ACME_DIRECTORY: wildPebble.directoryUrl, BERTH_TLS_ACME_EMAIL: 'hoster@example.com', BERTH_TLS_ACME_TERMS_AGREED: 'true',
        BERTH_TLS_CA_BUNDLE: wildPebble.caBundleFile, BERTH_TLS_PREFLIGHT_RESOLVER: `127.0.0.1:${dnsPort}`,
      },
    })
    wildRoot = join(dir, 'wild-root.pem')
    writeFileSync(wildRoot, await wildPebble.rootPem())
  }, 60_000)
  afterAll(async () => {
    await wild?.dispose()
    await wildPebble?.stop()
  })

  it('gets one certificate for *.wild.test through Berth\'s own DNS, presented for any site name', async () => {
    const deadline = Date.now() + 30_000
    const handshake = (name: string) =>
      spawnSync(['sh', '-c', `echo | openssl s_client -connect 127.0.0.1:${wildTls} -servername ${name} -CAfile ${wildRoot} -verify_return_error -verify_hostname ${name} 2>&1`]).stdout.toString()
    let out = handshake('any-site.wild.test')
    while (!/Verify return code: 0 \(ok\)/.test(out) && Date.now() < deadline) {
      await Bun.sleep(300)
      out = handshake('any-site.wild.test')
    }
    // On failure, Berth's log says why no certificate came (the order, the pre-flight, the DNS).
    expect(out, wild.output().slice(-3000)).toMatch(/Verify return code: 0 \(ok\)/)
    expect(handshake('another.wild.test')).toMatch(/Verify return code: 0 \(ok\)/)
    const issued = wild.output().split('\n').find((l) => l.includes('"certificate issued"'))
    expect(issued, wild.output().slice(-2000)).toBeDefined()
    expect(JSON.parse(issued!).names).toEqual(['*.wild.test', 'wild.test'])
  }, 40_000)
})
