import { spawnSync } from 'bun'
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, freePort, startBerth, type Berth } from './helpers/binary'
import { startPebble, type Pebble } from './helpers/pebble'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * What the HTTPS listener offers (issue 27), on the compiled binary with certificates from
 * Pebble (set up as test/tls.e2e.test.ts does): HTTP/2 by ALPN with the same bytes as HTTP/1.1,
 * h2load without a failed stream, no CBC suite, no answer to a handshake without SNI or naming a
 * host Berth has no certificate for, and HSTS on a site's answers only when its owner set it.
 * The console's wss:// socket over this listener is test/tls.e2e.test.ts's.
 */
const SITES = 'sites.test'

let pebble: Pebble
let berth: Berth
let tlsPort = 0
let key = ''
let slug = ''
let host = ''
let root = ''
const dir = mkdtempSync(join(tmpdir(), 'berth-h2-'))

interface CurlResult { version: string; code: number; headers: string; body: Buffer; error: string }

/** curl over HTTPS to `name` on Berth's TLS port, trusting Pebble's root only; `http` picks the version offered. */
function curl(name: string, path: string, http: '--http2' | '--http1.1', extra: string[] = []): CurlResult {
  const headers = join(dir, `h-${Math.random().toString(36).slice(2)}`)
  const p = spawnSync(['curl', '-sS', '--max-time', '10', http, '--cacert', root, '--resolve', `${name}:${tlsPort}:127.0.0.1`, '-D', headers, '-o', '-', '-w', '\n%{http_version} %{http_code}', ...extra, `https://${name}:${tlsPort}${path}`])
  const out = Buffer.from(p.stdout)
  const cut = out.lastIndexOf('\n')
  const [version = '', code = '0'] = out.subarray(cut + 1).toString().split(' ')
  let head = ''
  try {
    head = readFileSync(headers, 'utf8')
  } catch {
    // no answer at all
  }
  return { version, code: Number(code), headers: head, body: out.subarray(0, cut), error: p.exitCode === 0 ? '' : p.stderr.toString() }
}

/** openssl s_client's handshake with Berth's TLS port; `args` picks SNI, version and suites. */
function handshake(args: string[]): { ok: boolean; subject: string; cipher: string; output: string } {
  const p = spawnSync(['openssl', 's_client', '-connect', `127.0.0.1:${tlsPort}`, ...args], { stdin: new TextEncoder().encode('') })
  const output = p.stdout.toString() + p.stderr.toString()
  const cipher = /Cipher is (\S+)/.exec(output)?.[1] ?? ''
  return { ok: cipher !== '' && cipher !== '(NONE)', subject: /^subject=(.*)$/m.exec(output)?.[1] ?? '', cipher, output }
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

async function tlsActive(path: string, timeoutMs = 40_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const tls = (await api(berth.url, 'GET', path, { key })).json.data.tls
    if (tls.status === 'active') return
    if (Date.now() > deadline) throw new Error(`${path}: tls still ${JSON.stringify(tls)}`)
    await Bun.sleep(200)
  }
}

const today = async () => (await api(berth.url, 'GET', `/sites/${slug}/metrics/`, { key })).json.data.days.at(-1) as { requests: number; bytes_out: number; status_2xx: number }

beforeAll(async () => {
  const [port, dnsPort] = [await freePort(), await freePort()]
  tlsPort = await freePort()
  pebble = await startPebble({ httpPort: port, dnsServer: `127.0.0.1:${dnsPort}` })
  berth = await startBerth({
    port,
    siteUrl: `https://${SITES}:${tlsPort}`,
    env: {
      BERTH_SITES_DOMAIN: SITES, BERTH_DNS_LISTEN: `127.0.0.1:${dnsPort}`, BERTH_TLS_LISTEN: `127.0.0.1:${tlsPort}`,
      BERTH_TLS_ACME_DIRECTORY: pebble.directoryUrl, BERTH_TLS_ACME_EMAIL: 'hoster@example.com', BERTH_TLS_ACME_TERMS_AGREED: 'true',
      BERTH_TLS_CA_BUNDLE: pebble.caBundleFile, BERTH_TLS_PREFLIGHT_RESOLVER: `127.0.0.1:${dnsPort}`, BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour',
    },
  })
  instanceOf(berth)
  root = join(dir, 'root.pem')
  writeFileSync(root, await pebble.rootPem())
  slug = uniqueSlug('h2')
  host = `${slug}.${SITES}`
  key = (await buyDirect(berth.url, { slug })).data.api_key
  expect(await waitForSite(berth.url, key, slug)).toBe('active')
  await tlsActive(`/sites/${slug}/`)
}, 120_000)
afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
  await pebble?.stop()
})

describe('HTTP/2 on the HTTPS edge', () => {
  it('negotiates h2 by ALPN with curl --http2 and serves the same bytes as HTTP/1.1, counted alike', async () => {
    // A page of some 200 KB (several HTTP/2 DATA frames, more than one flow-control window's 64 KiB).
    const content = Array.from({ length: 4000 }, (_, i) => `<p>${i} ${Math.random().toString(36).slice(2)}</p>`).join('\n')
    expect((await api(berth.url, 'POST', `/sites/${slug}/files/write/`, { key, body: { path: 'public/big.html', content } })).status).toBe(200)
    const before = await today()

    const h2 = curl(host, '/big.html', '--http2', ['-v'])
    expect(h2.error).toBe('')
    expect(h2.version).toBe('2')
    expect(h2.code).toBe(200)
    const h1 = curl(host, '/big.html', '--http1.1')
    expect(h1.error).toBe('')
    expect(h1.version).toBe('1.1')
    expect(h1.code).toBe(200)
    expect(h2.body.length).toBe(Buffer.byteLength(content))
    expect(sha256(h2.body)).toBe(sha256(h1.body))
    expect(sha256(h2.body)).toBe(sha256(Buffer.from(content)))
    // A 404 of the container's over h2 as well.
    const missing = curl(host, '/missing.html', '--http2')
    expect(missing.code).toBe(404)

    const after = await today()
    expect(after.requests - before.requests).toBe(3)
    expect(after.status_2xx - before.status_2xx).toBe(2)
    // The body bytes each client received, whichever the protocol.
    expect(after.bytes_out - before.bytes_out).toBe(2 * Buffer.byteLength(content) + missing.body.length)
  })

  it('h2load completes every request over h2 with no failed stream', () => {
    const p = spawnSync(['h2load', '-n', '600', '-c', '4', '-m', '10', `--connect-to=127.0.0.1:${tlsPort}`, `https://${host}:${tlsPort}/`])
    const out = p.stdout.toString()
    expect(p.exitCode, out + p.stderr.toString()).toBe(0)
    expect(out).toMatch(/Application protocol: h2/)
    expect(out).toMatch(/requests: 600 total, 600 started, 600 done, 600 succeeded, 0 failed, 0 errored, 0 timeout/)
    expect(out).toMatch(/status codes: 600 2xx/)
  })

  it("serves Berth's own host over h2 too: the API", async () => {
    // The API's own certificate (site_url's host) is ordered at start like the site's; until it
    // is served, its name is one the listener has no certificate for (an alert, by design).
    let status = curl(SITES, '/api/v1/status/', '--http2')
    for (const deadline = Date.now() + 40_000; status.error !== '' && Date.now() < deadline; status = curl(SITES, '/api/v1/status/', '--http2')) await Bun.sleep(300)
    expect(status.error, berth.output().slice(-2000)).toBe('')
    expect(status.version).toBe('2')
    expect(status.code).toBe(200)
    expect(JSON.parse(status.body.toString()).ok).toBe(true)
  }, 60_000)
})

describe("the modules' rewriting over h2", () => {
  it('adds the seo head tags and serves the generated sitemap over h2, the same bytes as over HTTP/1.1', async () => {
    // Business: nginx + PHP-FPM in the container, seo included.
    const seoSlug = uniqueSlug('h2seo')
    const seoKey = (await buyDirect(berth.url, { slug: seoSlug, sku: 'svc_business_monthly' })).data.api_key as string
    expect(await waitForSite(berth.url, seoKey, seoSlug, 120_000)).toBe('active')
    const page = '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Harbour Bakery</title></head>\n<body><h1>Harbour Bakery</h1><p>Fresh sourdough every morning at the old harbour.</p></body></html>\n'
    expect((await api(berth.url, 'POST', `/sites/${seoSlug}/files/write/`, { key: seoKey, body: { path: 'public/index.html', content: page } })).status).toBe(200)
    expect((await api(berth.url, 'POST', `/sites/${seoSlug}/modules/seo/toggle/`, { key: seoKey, body: { enabled: true } })).status).toBe(200)
    const deadline = Date.now() + 40_000
    while ((await api(berth.url, 'GET', `/sites/${seoSlug}/`, { key: seoKey })).json.data.tls.status !== 'active') {
      if (Date.now() > deadline) throw new Error('no certificate for the seo site')
      await Bun.sleep(200)
    }
    const seoHost = `${seoSlug}.${SITES}`
    const h2 = curl(seoHost, '/', '--http2')
    expect(h2.error).toBe('')
    expect(h2.version).toBe('2')
    const home = h2.body.toString()
    expect(home).toContain(`<link rel="canonical" href="https://${seoHost}:${tlsPort}/">`)
    expect(home).toContain('<meta property="og:title" content="Harbour Bakery">')
    expect(home.slice(home.indexOf('</head>'))).toBe(page.slice(page.indexOf('</head>')))
    expect(sha256(curl(seoHost, '/', '--http1.1').body)).toBe(sha256(h2.body))
    const sitemap = curl(seoHost, '/sitemap.xml', '--http2')
    expect(sitemap.version).toBe('2')
    expect(sitemap.body.toString()).toContain(`<loc>https://${seoHost}:${tlsPort}/</loc>`)
  }, 150_000)
})

describe("the TLS listener's defaults", () => {
  it('offers AEAD suites only: a CBC suite is refused, GCM and ChaCha20 accepted', () => {
    for (const cbc of ['ECDHE-RSA-AES128-SHA', 'ECDHE-ECDSA-AES128-SHA', 'ECDHE-RSA-AES256-SHA', 'AES128-SHA', 'AES256-SHA256']) {
      const res = handshake(['-servername', host, '-tls1_2', '-cipher', cbc])
      expect(res.ok, `${cbc}: ${res.output.slice(-500)}`).toBe(false)
    }
    const aead = handshake(['-servername', host, '-tls1_2', '-cipher', 'ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-GCM-SHA256'])
    expect(aead.ok, aead.output.slice(-500)).toBe(true)
    const chacha = handshake(['-servername', host, '-tls1_2', '-cipher', 'ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-CHACHA20-POLY1305'])
    expect(chacha.ok, chacha.output.slice(-500)).toBe(true)
    const tls13 = handshake(['-servername', host, '-tls1_3'])
    expect(tls13.ok).toBe(true)
    expect(tls13.subject).toContain(host)
  })

  it("refuses a handshake naming a host it has no certificate for, or naming none, instead of showing some site's certificate", () => {
    for (const args of [['-servername', `nobody-${slug}.${SITES}`], ['-servername', 'example.org'], ['-noservername']]) {
      const res = handshake(args)
      expect(res.ok, `${args.join(' ')}: ${res.output.slice(-500)}`).toBe(false)
      expect(res.subject, args.join(' ')).toBe('')
      expect(res.output, args.join(' ')).toMatch(/alert/)
    }
    // The names it holds still shake hands.
    expect(handshake(['-servername', host]).subject).toContain(host)
  })

  it("sends Strict-Transport-Security on the site's HTTPS answers only once its owner sets hsts_max_age", async () => {
    const header = (r: CurlResult) => /^strict-transport-security: (.*)$/im.exec(r.headers)?.[1]?.trim() ?? null
    expect(header(curl(host, '/', '--http2'))).toBeNull()
    const set = await api(berth.url, 'POST', `/sites/${slug}/settings/`, { key, body: { hsts_max_age: 31536000 } })
    expect(set.status).toBe(200)
    expect(set.json.data.hsts_max_age).toBe(31536000)
    expect(header(curl(host, '/', '--http2'))).toBe('max-age=31536000')
    expect(header(curl(host, '/missing.html', '--http1.1'))).toBe('max-age=31536000')
    // Berth's own host is not the site's: no header there.
    expect(header(curl(SITES, '/api/v1/status/', '--http2'))).toBeNull()
    // Over plain HTTP the site's name is redirected to HTTPS, without the header.
    const plain = await fetch(`${berth.url}/`, { headers: { host }, redirect: 'manual' })
    expect(plain.status).toBe(308)
    expect(plain.headers.get('strict-transport-security')).toBeNull()

    expect((await api(berth.url, 'POST', `/sites/${slug}/settings/`, { key, body: { hsts_max_age: null } })).json.data.hsts_max_age).toBeNull()
    expect(header(curl(host, '/', '--http2'))).toBeNull()
  })

  it("shows the edge's own page over h2 to a site that is not serving (scheduled for deletion), and the site again once restored", async () => {
    expect((await api(berth.url, 'DELETE', `/sites/${slug}/delete/`, { key })).status).toBe(200)
    const page = curl(host, '/', '--http2')
    expect(page.error).toBe('')
    expect(page.version).toBe('2')
    expect(page.code).toBeGreaterThanOrEqual(400)
    expect(page.body.toString()).toContain('<!doctype html>')
    expect((await api(berth.url, 'POST', `/sites/${slug}/restore/`, { key })).status).toBe(200)
    let back = curl(host, '/big.html', '--http2')
    for (const deadline = Date.now() + 30_000; back.code !== 200 && Date.now() < deadline; back = curl(host, '/big.html', '--http2')) await Bun.sleep(300)
    expect(back.code).toBe(200)
    expect(back.version).toBe('2')
  })
})
