import { describe, expect, it } from 'vitest'
import { dispatcher, LISTENER_ROUTES, type ListenerServer, type ListenerTargets } from './dispatch'

/**
 * The listeners' table with targets that say who answered: a site's Host is `shop.sites.test`,
 * `berth.test` has a certificate (HTTPS on port 8443), one ACME token is pending.
 */
function table(o: { metricsOn?: boolean } = {}) {
  const targets: ListenerTargets = {
    acmeAnswer: (token) => (token === 'known' ? 'known.thumbprint' : undefined),
    httpsOrigin: (host) => (host.toLowerCase().replace(/:\d+$/, '') === 'berth.test' ? 'https://berth.test:8443' : null),
    isSiteHost: (host) => host.startsWith('shop.sites.test'),
    edge: () => new Response('edge'),
    plansList: () => new Response('plans-catalog'),
    webhook: (_request, processor) => new Response(`webhook ${processor}`),
    mcp: (_request, _server, secure) => new Response(`mcp${secure ? ' secure' : ''}`),
    console: (_request, _server, secure) => new Response(`console${secure ? ' secure' : ''}`),
    metrics: o.metricsOn === false ? null : async () => new Response('metrics'),
    api: (_request, _server, secure) => new Response(`api${secure ? ' secure' : ''}`),
  }
  const dispatch = dispatcher(targets)
  const server = {} as ListenerServer
  return async (path: string, o: { host?: string; method?: string; secure?: boolean } = {}) => {
    const res = (await dispatch(new Request(`http://${o.host ?? 'localhost'}${path}`, { method: o.method ?? 'GET', headers: { host: o.host ?? 'localhost' } }), server, o.secure))!
    return res.status === 308 ? `308 ${res.headers.get('location')}` : await res.text()
  }
}

describe('the listeners\' dispatch table', () => {
  it('names each entry once and ends with the API app, which takes everything left', () => {
    const names = LISTENER_ROUTES.map((r) => r.name)
    expect(new Set(names).size).toBe(names.length)
    expect(names.at(-1)).toBe('api')
    for (const r of LISTENER_ROUTES) expect(r.why.length, r.name).toBeGreaterThan(40)
  })

  it('answers a pending ACME challenge on any name, before the redirect and the edge; an unknown token goes on', async () => {
    const send = table()
    expect(await send('/.well-known/acme-challenge/known', { host: 'berth.test' })).toBe('known.thumbprint')
    expect(await send('/.well-known/acme-challenge/known', { host: 'shop.sites.test' })).toBe('known.thumbprint')
    expect(await send('/.well-known/acme-challenge/other', { host: 'shop.sites.test' })).toBe('edge')
    // The challenge path is never redirected, even for an unknown token.
    expect(await send('/.well-known/acme-challenge/other', { host: 'berth.test' })).toBe('api')
  })

  it('redirects plain HTTP for a name with a certificate, path and query kept, the catalog included; HTTPS is served', async () => {
    const send = table()
    expect(await send('/api/v1/status/?x=1', { host: 'berth.test:8080' })).toBe('308 https://berth.test:8443/api/v1/status/?x=1')
    expect(await send('/api/v1/plans/', { host: 'BERTH.test' })).toBe('308 https://berth.test:8443/api/v1/plans/')
    expect(await send('/api/v1/status/', { host: 'berth.test', secure: true })).toBe('api secure')
    expect(await send('/api/v1/status/', { host: 'other.test' })).toBe('api')
  })

  it("sends every path of a site's Host to the edge, Berth's own paths included", async () => {
    const send = table()
    for (const path of ['/', '/api/v1/plans/', '/mcp/', '/webhooks/stripe/', '/pay/cs_test_1/', '/console/x/socket']) expect(await send(path, { host: 'shop.sites.test' }), path).toBe('edge')
  })

  it("sends /console/ on Berth's own host to the console (page, scripts, WebSocket), on both listeners", async () => {
    const send = table()
    for (const path of ['/console/abc', '/console/abc/socket', '/console/assets/xterm.js']) expect(await send(path), path).toBe('console')
    expect(await send('/console/abc', { host: 'berth.test', secure: true })).toBe('console secure')
    expect(await send('/consoles')).toBe('api')
  })

  it("sends /metrics on Berth's own host to the metrics handler while metrics.token is set, to the API app (a 404) when not; a site's /metrics is the site's", async () => {
    const on = table()
    expect(await on('/metrics')).toBe('metrics')
    expect(await on('/metrics?x=1', { host: 'berth.test', secure: true })).toBe('metrics')
    expect(await on('/metrics/')).toBe('api')
    expect(await on('/metricsx')).toBe('api')
    expect(await on('/metrics', { host: 'shop.sites.test' })).toBe('edge')
    expect(await table({ metricsOn: false })('/metrics')).toBe('api')
  })

  it('answers GET of the plan catalog without a query from the cache; other forms go to the API app', async () => {
    const send = table()
    expect(await send('/api/v1/plans/')).toBe('plans-catalog')
    expect(await send('/api/v1/plans')).toBe('plans-catalog')
    expect(await send('/api/v1/plans/?limit=1')).toBe('api')
    expect(await send('/api/v1/plans/', { method: 'POST' })).toBe('api')
    expect(await send('/api/v1/plans/svc_static_monthly/')).toBe('api')
  })

  it("sends the processor's webhooks and MCP to their handlers, anything else to the API app", async () => {
    const send = table()
    expect(await send('/webhooks/stripe/', { method: 'POST' })).toBe('webhook stripe')
    expect(await send('/webhooks/stripe', { method: 'POST' })).toBe('webhook stripe')
    expect(await send('/webhooks/stripe/extra', { method: 'POST' })).toBe('api')
    expect(await send('/mcp/', { method: 'POST' })).toBe('mcp')
    expect(await send('/mcp?session=1', { method: 'POST', secure: true })).toBe('mcp secure')
    expect(await send('/mcp/tools')).toBe('api')
    expect(await send('/llms.txt')).toBe('api')
  })
})
