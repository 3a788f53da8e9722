import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { api, freePort, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { ClockedBerths, DAY_S } from './helpers/clocked'
import { verifiedBy, WebhookReceiver } from './helpers/webhook-receiver'

/**
 * The events of issue 41 recorded on the compiled binary and a real Docker engine: a shared-plan
 * site bought (site.active), a tree of files deployed (deployment.succeeded), the card switched to
 * one that declines through the built-in billing portal's form and the binary restarted a month
 * later (dev.clock_offset_seconds: the renewal job runs at start; payment.failed,
 * subscription.past_due), a key revoked (key.revoked): each is in the account's log, in that
 * order (GET /events/), with the bodies docs/api.md "Event types" documents, and none holds a key.
 * A webhook endpoint made right after the purchase (a receiver in this process, on loopback, which
 * outbound.allow_networks lets in) gets every one of them recorded after it, across the restart,
 * signed (verified with the standardwebhooks package), in the log's order, with the log's bodies.
 */
const ENV = { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour', BERTH_OUTBOUND_ALLOW_NETWORKS: '127.0.0.0/8' }
const receiver = new WebhookReceiver()
const dirs: string[] = []
afterAll(async () => {
  await clocked.stopAll()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
  await receiver.stop()
}, 120_000)

const clocked = new ClockedBerths(ENV)
/** Starts the binary on `dataDir`/`port` with the clock `days` ahead. */
const at = (days: number, dataDir: string, port: number) => clocked.at(days * DAY_S, dataDir, port)

interface Event { id: string; type: string; account_id: string; site: string | null; created_at: string; data: Record<string, any> }

/** The account's events as GET /events/ lists them, oldest first. */
async function eventsOf(b: Berth, key: string): Promise<Event[]> {
  const res = await api(b.url, 'GET', '/events/?limit=100', { key })
  expect(res.status, res.text).toBe(200)
  expect(res.json.data.has_more).toBe(false)
  return res.json.data.events as Event[]
}

async function eventually<T>(fn: () => Promise<T>, check: (v: T) => boolean, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await fn()
    if (check(v)) return v
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)}`)
    await Bun.sleep(100)
  }
}

/** Replaces the card on file through the local billing portal's own form (its CSRF cookie and field), as a browser would post it. */
async function replaceCard(b: Berth, key: string, card: string): Promise<void> {
  const link = await api(b.url, 'GET', '/account/billing-portal/?flow=payment_method_update', { key })
  expect(link.status, link.text).toBe(200)
  const page = await fetch(link.json.data.url)
  const html = await page.text()
  const cookie = page.headers.get('set-cookie')!.split(';')[0]!
  const csrf = /name="csrf" value="([0-9a-f]+)"/.exec(html)![1]!
  const posted = await fetch(new URL('card', link.json.data.url.endsWith('/') ? link.json.data.url : `${link.json.data.url}/`), {
    method: 'POST', redirect: 'manual',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ card, exp: '12/40', cvc: '123', csrf }).toString(),
  })
  expect(posted.status, await posted.text()).toBe(303)
}

describe('events on the binary', () => {
  it('site.active, deployment.succeeded, payment.failed and subscription.past_due, key.revoked: in order, with their documented bodies', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'berth-events-'))
    dirs.push(dataDir)
    const port = await freePort()
    let b = await at(0, dataDir, port)
    const slug = uniqueSlug('ev')
    const { data } = await buyDirect(b.url, { slug, sku: 'svc_starter_monthly' })
    const key = data.api_key as string
    const accountId = (await api(b.url, 'GET', '/auth/whoami/', { key })).json.data.user.id as string
    expect(accountId).toEqual(expect.any(String))
    const hook = await api(b.url, 'POST', '/webhooks/', { key, body: { url: receiver.url() } })
    expect(hook.status, hook.text).toBe(201)
    const secret = hook.json.data.secret as string
    expect(await waitForSite(b.url, key, slug, 120_000)).toBe('active')

    // A tree of files, then a deploy (shared: nothing to reload; the files are recorded for rollback).
    for (const [path, content] of [['public/index.html', '<h1>events</h1>'], ['public/css/site.css', 'h1 { color: teal }'], ['deploy.sh', 'echo deployed\n']]) {
      expect((await api(b.url, 'POST', `/sites/${slug}/files/write/`, { key, body: { path, content } })).status).toBe(200)
    }
    const deploy = await api(b.url, 'POST', `/sites/${slug}/deploy/`, { key })
    expect([200, 202], deploy.text).toContain(deploy.status)
    const deployment = await eventually(() => api(b.url, 'GET', `/sites/${slug}/deployments/${deploy.json.data.id}/`, { key }), (r) => r.json.data.status === 'succeeded' || r.json.data.status === 'failed', 'deployment', 60_000)
    expect(deployment.json.data.status).toBe('succeeded')

    // A card that declines, then a month later: the renewal is declined.
    await replaceCard(b, key, '4000 0000 0000 0002')
    await b.stop()
    b = await at(31, dataDir, port)
    await eventually(async () => (await api(b.url, 'GET', '/account/subscriptions/', { key })).json.data[0].status, (s) => s === 'past_due', 'past due')

    // A key made, then revoked.
    const made = await api(b.url, 'POST', '/keys/create/', { key, body: { name: 'ci', scopes: ['read'] } })
    expect(made.status, made.text).toBe(201)
    expect((await api(b.url, 'POST', `/keys/${made.json.data.key_id}/revoke/`, { key })).status).toBe(200)

    const events = await eventsOf(b, key)
    const wanted = ['site.active', 'deployment.succeeded', 'payment.failed', 'subscription.past_due', 'key.revoked']
    expect(events.filter((e) => wanted.includes(e.type)).map((e) => e.type)).toEqual(wanted)
    const one = (type: string) => events.find((e) => e.type === type)!
    for (const e of events) {
      expect(e.id).toMatch(/^evt_[0-9a-f]{24}$/)
      expect(e.account_id).toBe(accountId)
      expect(Date.parse(e.created_at)).not.toBeNaN()
    }
    expect(one('site.active')).toMatchObject({ site: slug, data: { slug, plan: 'starter', hosting_type: 'shared', status: 'active', error: null, suspension: null } })
    expect(one('deployment.succeeded')).toMatchObject({ site: slug, data: { id: deploy.json.data.id, site_slug: slug, status: 'succeeded', error: null, files_recorded: true } })
    expect(one('deployment.succeeded').data).not.toHaveProperty('output')
    expect(one('payment.failed')).toMatchObject({ site: null, data: { kind: 'renewal', status: 'failed', currency: 'CAD' } })
    expect(one('payment.failed').data.failure).toMatch(/declined/i)
    expect(one('subscription.past_due')).toMatchObject({ site: null, data: { status: 'past_due', sites: [slug] } })
    expect(one('subscription.past_due').data.last_charge_error).toMatch(/declined/i)
    expect(one('key.revoked')).toMatchObject({ data: { key_id: made.json.data.key_id, prefix: made.json.data.prefix, name: 'ci', scopes: ['read'], status: 'revoked' } })
    // The purchase and the keys were told too; no event holds a key.
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['payment.succeeded', 'key.created']))
    const all = JSON.stringify(events)
    expect(all).not.toContain(key)
    expect(all).not.toContain(made.json.data.api_key)

    // The webhook endpoint got the same events from its creation on, in order, signed, the same bodies.
    const first = events.findIndex((e) => e.id === receiver.received[0]?.id)
    expect(first).toBeGreaterThanOrEqual(0)
    const after = events.slice(first)
    await receiver.until(after.length, 30_000)
    expect(receiver.received.map((r) => r.id)).toEqual(after.map((e) => e.id))
    expect(after.map((e) => e.type)).toEqual(expect.arrayContaining(['deployment.succeeded', 'payment.failed', 'subscription.past_due', 'key.revoked']))
    receiver.received.forEach((r, i) => {
      // The receiver's clock as Berth's (a month ahead after the restart: dev.clock_offset_seconds).
      const payload = verifiedBy(secret, r, Number(r.timestamp) * 1000) as Event
      expect(payload).toEqual(after[i])
    })
    expect(() => verifiedBy(`whsec_${Buffer.from('not the secret, 32 bytes long!!').toString('base64')}`, receiver.received[0]!, Date.now())).toThrow()
  }, 240_000)
})
