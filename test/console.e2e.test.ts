import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { ConsoleClient, openTicket, upgradeRefusal } from './helpers/console'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites, siteShell } from './helpers/sites'

/**
 * The console's WebSocket protocol (issue 26) on the compiled binary and a real site, with Bun's
 * WebSocket client as a program would use it: terminal bytes both ways, control messages as
 * JSON text frames, the exit code and every refusal said. Tickets live 4 s here
 * (dev.console_ticket_seconds) so that one expires within the test.
 */
const TICKET_S = 4
let berth: Berth
let site: { slug: string; key: string }

beforeAll(async () => {
  berth = await startBerth({ env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour', BERTH_DEV_CONSOLE_TICKET_SECONDS: String(TICKET_S) } })
  instanceOf(berth)
  const slug = uniqueSlug('console')
  const { data } = await buyDirect(berth.url, { sku: 'svc_starter_monthly', slug })
  expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
  site = { slug, key: data.api_key }
}, 120_000)
afterAll(async () => {
  await berth?.stop()
  await removeInstanceSites(berth)
  await berth?.dispose()
})

/** The site's processes as `ps` lists them. */
const processes = async () => (await siteShell(berth, site.slug, 'ps -o pid,args')).output

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms`)
    await Bun.sleep(50)
  }
  return Date.now() - started
}

describe('the console over a WebSocket', () => {
  it('answers a ticket with its URLs on Berth\'s own origin, valid for the configured time', async () => {
    const before = Date.now()
    const t = await openTicket(berth.url, site.key, site.slug)
    expect(t.ticket).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(t.websocket_url).toBe(`ws://127.0.0.1:${berth.port}/console/${t.ticket}/socket`)
    expect(t.page_url).toBe(`${berth.url}/console/${t.ticket}`)
    const expires = Date.parse(t.expires_at) - before
    expect(expires).toBeGreaterThan(TICKET_S * 1000 - 1000)
    expect(expires).toBeLessThanOrEqual(TICKET_S * 1000 + 1000)
  })

  it('runs a shell as the site user in its home, follows a resize, and ends with the exit code', async () => {
    const t = await openTicket(berth.url, site.key, site.slug)
    const c = new ConsoleClient(t.websocket_url, '?cols=100&rows=30')
    await c.opened
    c.type('echo "$((6*7)) $(id -u) $PWD"; stty size\n')
    await c.waitFor(/42 1000 \/home\/site\r?\n30 100/)
    c.resize(132, 43)
    const from = c.output.length
    c.type('stty size\n')
    await c.waitFor(/43 132/, from)
    c.type('exit 3\n')
    const { control, close } = await c.ending()
    expect(control).toEqual({ type: 'exit', code: 3 })
    expect(close.code).toBe(1000)
  })

  it('spends the ticket at the upgrade: a second connection with it is refused (410), the page says so', async () => {
    const t = await openTicket(berth.url, site.key, site.slug)
    // Loading the page does not spend it.
    expect((await fetch(t.page_url)).status).toBe(200)
    const c = new ConsoleClient(t.websocket_url)
    await c.opened
    const again = await upgradeRefusal(t.websocket_url)
    expect(again.status).toBe(410)
    expect(again.text).toContain('already used')
    const page = await fetch(t.page_url)
    expect(page.status).toBe(410)
    expect(await page.text()).toContain('This console link was already used')
    c.close()
    await c.closed
  })

  it('refuses an expired ticket (410) and an unknown one (404), before any upgrade', async () => {
    const t = await openTicket(berth.url, site.key, site.slug)
    await Bun.sleep(TICKET_S * 1000 + 200)
    const expired = await upgradeRefusal(t.websocket_url)
    expect(expired).toMatchObject({ status: 410 })
    expect(expired.text).toContain('expired')
    const page = await fetch(t.page_url)
    expect(page.status).toBe(410)
    expect(await page.text()).toContain('This console link has expired')
    const unknown = t.websocket_url.replace(t.ticket, 'A'.repeat(43))
    expect((await upgradeRefusal(unknown)).status).toBe(404)
    expect((await fetch(t.page_url.replace(t.ticket, 'A'.repeat(43)))).status).toBe(404)
    // A Bun client sees the refusal too.
    const c = new ConsoleClient(t.websocket_url)
    await expect(c.opened).rejects.toThrow(/410/)
  })

  it('refuses an upgrade from another origin (403) without spending the ticket', async () => {
    const t = await openTicket(berth.url, site.key, site.slug)
    const foreign = await upgradeRefusal(t.websocket_url, { origin: 'https://evil.example' })
    expect(foreign.status).toBe(403)
    expect(foreign.text).toContain(berth.url)
    const c = new ConsoleClient(t.websocket_url)
    await c.opened
    c.type('exit\n')
    expect((await c.ending()).control).toEqual({ type: 'exit', code: 0 })
  })

  it('ends the session with an error frame on a malformed control message', async () => {
    const t = await openTicket(berth.url, site.key, site.slug)
    const c = new ConsoleClient(t.websocket_url)
    await c.opened
    c.sendText('{"type":"resize","cols":0,"rows":"x"}')
    const { control, close } = await c.ending()
    expect(control).toMatchObject({ type: 'error', code: 'bad_message' })
    expect(String(control!.message)).toContain('resize')
    expect(close.code).toBe(1000)
  })

  it('kills what the shell started when the client goes away', async () => {
    const t = await openTicket(berth.url, site.key, site.slug)
    const c = new ConsoleClient(t.websocket_url)
    await c.opened
    c.type('sleep 4321 & (trap "" HUP; exec sleep 4322) & echo started\n')
    await c.waitFor(/started/)
    await until(async () => /sleep 4322/.test(await processes()), 5000)
    c.close()
    await until(async () => !/sleep 432\d/.test(await processes()), 5000)
  })

  it('allows three sessions per site: the fourth is refused (429) at the ticket and at the upgrade', async () => {
    const spare = await openTicket(berth.url, site.key, site.slug)
    const open: ConsoleClient[] = []
    for (let i = 0; i < 3; i++) {
      const c = new ConsoleClient((await openTicket(berth.url, site.key, site.slug)).websocket_url)
      await c.opened
      c.type(`echo session-${i}\n`)
      await c.waitFor(new RegExp(`\\nsession-${i}`))
      open.push(c)
    }
    const refused = await api(berth.url, 'POST', `/sites/${site.slug}/console/`, { key: site.key })
    expect(refused.status).toBe(429)
    expect(refused.json.error.code).toBe('RATE_LIMITED')
    expect(refused.json.error.message).toContain('3 console sessions open')
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    const upgrade = await upgradeRefusal(spare.websocket_url)
    expect(upgrade.status).toBe(429)
    open[0]!.type('exit\n')
    await open[0]!.closed
    // A place came free: the spare ticket (not spent by the refusal) now works.
    const c = new ConsoleClient(spare.websocket_url)
    await c.opened
    for (const other of [...open.slice(1), c]) other.close()
    await Promise.all([...open.slice(1), c].map((x) => x.closed))
  })

  it('ends an open session within two seconds of its key being revoked', async () => {
    const created = await api(berth.url, 'POST', '/keys/create/', { key: site.key, body: { name: 'console', scopes: ['read', 'write'] } })
    expect(created.status).toBe(201)
    const t = await openTicket(berth.url, created.json.data.api_key, site.slug)
    const c = new ConsoleClient(t.websocket_url)
    await c.opened
    c.type('echo alive\n')
    await c.waitFor(/\nalive/)
    const revokedAt = Date.now()
    expect((await api(berth.url, 'POST', `/keys/${created.json.data.key_id}/revoke/`, { key: site.key })).status).toBe(200)
    const { control } = await c.ending(5000)
    expect(Date.now() - revokedAt).toBeLessThan(2500)
    expect(control).toMatchObject({ type: 'error', code: 'key_revoked' })
  })

  it('refuses other keys as every route does: another account\'s 404, a read-only key 403', async () => {
    const stranger = (await api(berth.url, 'POST', '/auth/register/', { body: { email: `${uniqueSlug('x')}@example.com` } })).json.data.api_key
    const other = await api(berth.url, 'POST', `/sites/${site.slug}/console/`, { key: stranger })
    expect(other.status).toBe(404)
    const reader = (await api(berth.url, 'POST', '/keys/create/', { key: site.key, body: { name: 'reader', scopes: ['read'] } })).json.data.api_key
    const readOnly = await api(berth.url, 'POST', `/sites/${site.slug}/console/`, { key: reader })
    expect(readOnly.status).toBe(403)
  })
})
