import { describe, expect, it } from 'vitest'
import { BIG, chunksOf, TIMEOUT_MS, useEdgeProxy } from '../../test/helpers/edge-proxy'
import { sha256 } from '../../test/helpers/upstreams'

/**
 * The edge proxy forwarding to real upstreams on loopback: headers, bodies streamed both ways,
 * kept-alive connections, and the answers when the container gives none. The pages the edge
 * answers itself, its records, metrics and logs are in proxy-reporting.test.ts; the setup both
 * share is test/helpers/edge-proxy.ts.
 */

const proxy = useEdgeProxy()
const { visit } = proxy

describe('forwarding a request', () => {
  it('keeps method, path, query, Host and end-to-end headers, and sets the forwarding headers', async () => {
    const res = await visit('app', '/echo?q=1&r=%20x', {
      method: 'PUT',
      body: 'hello',
      headers: { 'x-custom': 'yes', 'x-forwarded-for': '6.6.6.6', 'x-real-ip': '6.6.6.6', 'x-forwarded-host': 'evil.example', forwarded: 'for=6.6.6.6', via: '1.1 client-proxy' },
    })
    expect(res.status).toBe(200)
    const echo = await res.json()
    expect(echo.method).toBe('PUT')
    expect(echo.target).toBe('/echo?q=1&r=%20x')
    expect(echo.headers.host).toBe('app.localhost:8080')
    expect(echo.headers['x-custom']).toBe('yes')
    expect(echo.headers['x-forwarded-for']).toBe('127.0.0.1')
    expect(echo.headers['x-real-ip']).toBe('127.0.0.1')
    expect(echo.headers['x-forwarded-proto']).toBe('http')
    expect(echo.headers['x-forwarded-host']).toBe('app.localhost:8080')
    expect(echo.headers.forwarded).toBeUndefined()
    expect(echo.headers.via).toBe('1.1 client-proxy, 1.1 berth')
    expect(echo.bodyLength).toBe(5)
  })

  it('forwards header bytes above 0x7f unchanged', async () => {
    const res = await visit('app', '/echo', { headers: { 'x-latin': 'caf\u00e9' } })
    const { headers } = await res.json()
    expect(headers['x-latin']).toBe('caf\u00e9')
  })

  it('drops hop-by-hop request headers, including those Connection names', async () => {
    const res = await visit('app', '/echo', {
      headers: { connection: 'keep-alive, x-hop', 'x-hop': 'secret', 'keep-alive': 'timeout=5', 'proxy-connection': 'keep-alive', te: 'trailers', trailer: 'x-sum', upgrade: 'h2c', 'x-kept': 'kept' },
    })
    const { headers } = await res.json()
    for (const name of ['x-hop', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade']) expect(headers[name], name).toBeUndefined()
    expect(headers.connection ?? 'keep-alive').toBe('keep-alive')
    expect(headers['x-kept']).toBe('kept')
  })

  it('drops hop-by-hop response headers, keeps repeated Set-Cookie and adds itself to Via', async () => {
    const res = await visit('raw', '/hop')
    expect(await res.text()).toBe('ok')
    for (const name of ['x-secret', 'keep-alive', 'proxy-connection', 'trailer', 'upgrade']) expect(res.headers.get(name), name).toBeNull()
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2'])
    expect(res.headers.get('via')).toBe('1.0 inner, 1.1 berth')
    expect(res.headers.get('content-type')).toBe('text/plain')
  })

  it('passes compressed bodies through untouched', async () => {
    const res = await visit('app', '/gzip', { headers: { 'accept-encoding': 'gzip' }, decompress: false } as RequestInit)
    expect(res.headers.get('content-encoding')).toBe('gzip')
    const body = new Uint8Array(await res.arrayBuffer())
    expect(new TextDecoder().decode(Bun.gunzipSync(body))).toBe('compressed '.repeat(100))
  })

  it('skips interim responses and answers HEAD with the container’s Content-Length', async () => {
    const interim = await visit('raw', '/interim')
    expect(interim.status).toBe(201)
    expect(await interim.text()).toBe('done')
    const head = await visit('raw', '/head', { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(head.headers.get('content-length')).toBe('12345')
  })

  it('reads a body delimited by the connection closing, and a Connection: close answer', async () => {
    const res = await visit('raw', '/close-delimited')
    expect(await res.text()).toBe('until the end')
    const bye = await visit('raw', '/conn-close')
    expect(await bye.text()).toBe('bye')
    expect(bye.headers.get('connection')).not.toBe('close')
  })
})

describe('streaming', () => {
  it('streams a 5 MB request body up intact, with a length and chunked', async () => {
    const fixed = await (await visit('app', '/echo', { method: 'POST', body: BIG })).json()
    expect(fixed.bodyLength).toBe(BIG.length)
    expect(fixed.bodySha256).toBe(sha256(BIG))
    const chunked = await (await visit('app', '/echo', { method: 'POST', body: chunksOf(BIG, 70_000), duplex: 'half' } as RequestInit)).json()
    expect(chunked.headers['transfer-encoding']).toBe('chunked')
    expect(chunked.bodyLength).toBe(BIG.length)
    expect(chunked.bodySha256).toBe(sha256(BIG))
  })

  it('streams a 5 MB response down intact, with a length and chunked; keeps the length of a buffered one', async () => {
    const fixed = await visit('app', '/big')
    // Bun's listener sends every streamed body chunked (oven-sh/bun#10507), so the length is not kept.
    expect(sha256(await fixed.arrayBuffer())).toBe(sha256(BIG))
    const small = await visit('app', '/size?n=300000')
    expect(small.headers.get('content-length')).toBe('300000')
    expect(sha256(await small.arrayBuffer())).toBe(sha256(BIG.subarray(0, 300_000)))
    const chunked = await visit('app', '/big-chunked')
    expect(chunked.headers.get('content-length')).toBeNull()
    expect(sha256(await chunked.arrayBuffer())).toBe(sha256(BIG))
  })

  it('decodes a chunked response', async () => {
    const res = await visit('app', '/chunked')
    expect(await res.text()).toBe('one,two,three,four')
  })

  it('delivers a slowly produced response progressively', async () => {
    const res = await visit('app', '/slow')
    const reader = res.body!.getReader()
    // The container produces its last chunk only after the client has read the first one.
    const first = await Promise.race([reader.read(), Bun.sleep(3000).then(() => 'stuck' as const)])
    expect(first).not.toBe('stuck')
    expect(new TextDecoder().decode((first as ReadableStreamReadResult<Uint8Array>).value)).toBe('first;')
    proxy.upstream.release()
    let rest = ''
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value)
    expect(rest).toBe('last')
  })
})

describe('keep-alive', () => {
  it('reuses a few upstream connections across many requests', async () => {
    const opened = proxy.edge.stats().connectionsOpened
    for (let i = 0; i < 50; i++) expect((await visit('keepalive', `/size?n=${i * 100}`)).status).toBe(200)
    await Promise.all(Array.from({ length: 8 }, () => visit('keepalive', '/size?n=10').then((r) => r.text())))
    for (let i = 0; i < 20; i++) await (await visit('keepalive', '/size?n=5000')).text()
    expect(proxy.keepAliveUpstream.peers.size).toBeLessThanOrEqual(8)
    expect(proxy.edge.stats().connectionsOpened - opened).toBe(proxy.keepAliveUpstream.peers.size)
  })

  it('retries once on a fresh connection when a kept-alive one was closed by the container', async () => {
    expect(await (await visit('stale', '/')).text()).toBe('fresh')
    expect(await (await visit('stale', '/')).text()).toBe('fresh')
    expect(proxy.staleUpstream.connections).toBe(2)
  })

  it('does not reuse a connection the container asked to close', async () => {
    const before = proxy.raw.connections
    await (await visit('raw', '/conn-close')).text()
    await (await visit('raw', '/conn-close')).text()
    expect(proxy.raw.connections - before).toBe(2)
  })
})

describe('when there is no answer', () => {
  it('answers 502 with a page when the container is down', async () => {
    const res = await visit('down', '/')
    expect(res.status).toBe(502)
    expect(res.headers.get('content-type')).toContain('text/html')
    expect(await res.text()).toContain('This site is not answering')
  })

  it('answers 502 when the container breaks HTTP or stops mid-body', async () => {
    expect((await visit('raw', '/garbage')).status).toBe(502)
    // A body small enough to be gathered first: nothing was sent yet, so the client gets a 502.
    expect((await visit('raw', '/cut?n=100000')).status).toBe(502)
    // A streamed body has already started with its 200: the client's connection is cut instead.
    const cut = await visit('raw', '/cut?n=10000000')
    expect(cut.status).toBe(200)
    await expect(cut.arrayBuffer()).rejects.toThrow()
  })

  it('answers 504 when the container is too slow', async () => {
    const started = performance.now()
    const res = await visit('app', '/sleep?ms=4000')
    expect(res.status).toBe(504)
    expect(await res.text()).toContain('took too long')
    expect(performance.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 50)
    expect(performance.now() - started).toBeLessThan(TIMEOUT_MS + 1500)
  })
})

describe('HSTS (a site whose owner set hsts_max_age)', () => {
  /** The edge's answer to a request for `slug.localhost` arriving on `scheme`'s listener. */
  const over = (scheme: 'https' | 'http', slug: string, path = '/echo') =>
    proxy.edge.handle(new Request(`${scheme}://${slug}.localhost${path}`, { headers: { host: `${slug}.localhost` } }), '127.0.0.1')

  it("sends Strict-Transport-Security on that site's HTTPS answers only, its own pages included", async () => {
    const secure = await over('https', 'strict')
    expect(secure.status).toBe(200)
    expect(secure.headers.get('strict-transport-security')).toBe('max-age=600')
    // The same container head over plain HTTP (its parsed fields are kept and shared): no header.
    const plain = await over('http', 'strict')
    expect(plain.status).toBe(200)
    expect(plain.headers.get('strict-transport-security')).toBeNull()
    expect((await over('https', 'strict')).headers.get('strict-transport-security')).toBe('max-age=600')

    const page = await over('https', 'strict-paused')
    expect(page.status).toBe(503)
    expect(page.headers.get('strict-transport-security')).toBe('max-age=600')
    expect((await over('http', 'strict-paused')).headers.get('strict-transport-security')).toBeNull()
  })

  it('sends none for a site without the setting, over HTTPS too', async () => {
    const res = await over('https', 'app')
    expect(res.status).toBe(200)
    expect(res.headers.get('strict-transport-security')).toBeNull()
    expect((await over('https', 'paused')).headers.get('strict-transport-security')).toBeNull()
  })
})
