import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'
import { verifiedBy, WebhookReceiver } from '../../../test/helpers/webhook-receiver'
import type { EventType } from '../../domain/events'

/**
 * Webhook deliveries (issue 41, items 3 and 5) in-process: the API on a real SQLite file, events
 * recorded in the log, and a real HTTP receiver on loopback (let in by outbound.allow_networks)
 * that verifies every delivery with the `standardwebhooks` package. Time is Berth's manual clock:
 * a retry is due once the test moves it, and the receiver's clock reads the same.
 */
const h = inProcess({ env: { BERTH_OUTBOUND_ALLOW_NETWORKS: '127.0.0.0/8' }, webhookTimeoutMs: 300 })
const sender = h.services.webhookSender
let account: { key: string; accountId: string }

beforeAll(async () => {
  h.clock.set(Date.now())
  sender.start()
  account = await h.register()
})
afterAll(() => {
  sender.stop()
  h.close()
})

const SECOND = 1000
const MINUTE = 60 * SECOND

async function drain(): Promise<void> {
  sender.kick()
  await Bun.sleep(5)
  await sender.idle()
}

function record(type: EventType, data: Record<string, unknown> = {}, accountId = account.accountId) {
  return h.services.events.record({ type, accountId, data })
}

async function endpoint(receiver: WebhookReceiver, body: Record<string, unknown> = {}, key = account.key) {
  const made = await h.call('POST', '/api/v1/webhooks/', { key, body: { url: receiver.url(), ...body } })
  expect(made.status, made.text).toBe(201)
  return made.json.data as { id: string; secret: string }
}

const deliveries = async (id: string, key = account.key) => (await h.call('GET', `/api/v1/webhooks/${id}/deliveries/`, { key })).json.data as any[]
const view = async (id: string, key = account.key) => (await h.call('GET', `/api/v1/webhooks/${id}/`, { key })).json.data

/** The account's webhook_endpoint.disabled events, as the log holds them. */
const disabledEvents = () =>
  h.services.events.list({ accountId: account.accountId, types: ['webhook_endpoint.disabled'], limit: 100 }).map((e) => ({ ...e, data: JSON.parse(e.data) as Record<string, unknown> }))

/** Each endpoint of its own account, so one test's events never reach another's receiver. */
async function freshAccount() {
  account = await h.register()
}

describe('webhook deliveries', () => {
  it('every event arrives signed per Standard Webhooks, in order, with the event as GET /events/ shows it; webhook-id is the event id', async () => {
    await freshAccount()
    const receiver = new WebhookReceiver()
    const ep = await endpoint(receiver)
    expect(ep.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    const events = [record('key.created', { n: 1 }), record('site.active', { n: 2 }), record('key.revoked', { n: 3 })]
    await drain()
    await receiver.until(3)
    expect(receiver.received.map((r) => r.id)).toEqual(events.map((e) => e.id))
    for (const [i, r] of receiver.received.entries()) {
      const payload = verifiedBy(ep.secret, r, h.clock.now()) as any
      expect(payload).toMatchObject({ id: events[i]!.id, type: events[i]!.type, data: { n: i + 1 } })
      expect(r.headers['content-type']).toBe('application/json')
      expect(Number(r.timestamp)).toBe(Math.floor(h.clock.now() / 1000))
    }
    // The body is the event exactly as the log shows it.
    const listed = await h.call('GET', '/api/v1/events/?types=key.created,site.active,key.revoked', { key: account.key })
    expect(listed.status, listed.text).toBe(200)
    expect(receiver.received.map((r) => JSON.parse(r.body))).toEqual(listed.json.data.events.filter((e: any) => events.some((x) => x.id === e.id)))
    const list = await deliveries(ep.id)
    expect(list.map((d) => [d.event_id, d.status, d.attempts, d.last_code])).toEqual(events.reverse().map((e) => [e.id, 'succeeded', 1, 200]))
    receiver.stop()
  })

  it('lists deliveries page by page with before: newest first, none missing or repeated; a before of another endpoint is a 422', async () => {
    await freshAccount()
    const receiver = new WebhookReceiver()
    const [ep, other] = [await endpoint(receiver), await endpoint(receiver)]
    const events = Array.from({ length: 7 }, (_, n) => record('site.up', { n }))
    await drain()
    await receiver.until(14)
    const seen: string[] = []
    let before: string | undefined
    for (let pages = 0; ; pages++) {
      const page = await h.call('GET', `/api/v1/webhooks/${ep.id}/deliveries/?limit=3${before ? `&before=${before}` : ''}`, { key: account.key })
      expect(page.status, page.text).toBe(200)
      if (page.json.data.length === 0) break
      expect(pages).toBeLessThan(3)
      seen.push(...page.json.data.map((d: { event_id: string }) => d.event_id))
      before = page.json.data.at(-1).id
    }
    expect(seen).toEqual(events.map((e) => e.id).reverse())
    const theirs = (await deliveries(other.id))[0].id
    for (const bad of [theirs, 'wd_000000000000000000000000']) {
      const refused = await h.call('GET', `/api/v1/webhooks/${ep.id}/deliveries/?before=${bad}`, { key: account.key })
      expect(refused.status, refused.text).toBe(422)
      expect(refused.json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'before' })
    }
    expect((await h.call('GET', `/api/v1/webhooks/${ep.id}/deliveries/?before=nope`, { key: account.key })).json.error).toMatchObject({ param: 'before' })
    receiver.stop()
  })

  it('an endpoint with types gets those only; another account\'s events never reach it', async () => {
    await freshAccount()
    const receiver = new WebhookReceiver()
    await endpoint(receiver, { types: ['key.revoked'] })
    const other = await h.register()
    record('key.created')
    const wanted = record('key.revoked')
    record('key.revoked', {}, other.accountId)
    await drain()
    await receiver.until(1)
    await Bun.sleep(50)
    expect(receiver.received.map((r) => r.id)).toEqual([wanted.id])
    receiver.stop()
  })

  it('a receiver answering 500 for a while, then 200: every event arrives once it recovers, in order, with the same ids on every attempt', async () => {
    await freshAccount()
    const receiver = new WebhookReceiver()
    receiver.answer = (_r, n) => new Response('down', { status: n <= 3 ? 500 : 200 })
    const ep = await endpoint(receiver)
    const events = [record('deployment.succeeded'), record('deployment.failed'), record('site.down')]
    await drain()
    // One in flight per endpoint: the first event is tried, the others wait behind it.
    expect(receiver.received.map((r) => r.id)).toEqual([events[0]!.id])
    let head = (await deliveries(ep.id)).find((d) => d.event_id === events[0]!.id)
    expect(head).toMatchObject({ status: 'pending', attempts: 1, last_code: 500 })
    expect(Date.parse(head.next_attempt_at)).toBe(h.clock.now() + 5 * SECOND)
    expect((await view(ep.id)).failing_since).not.toBeNull()
    h.clock.advance(5 * SECOND)
    await drain()
    h.clock.advance(5 * MINUTE)
    await drain()
    h.clock.advance(30 * MINUTE)
    await drain()
    await receiver.until(6)
    expect(receiver.received.map((r) => r.id)).toEqual([events[0]!.id, events[0]!.id, events[0]!.id, ...events.map((e) => e.id)])
    // Every attempt verifies (a fresh timestamp and signature each time).
    for (const r of receiver.received) expect(() => verifiedBy(ep.secret, r, Number(r.timestamp) * 1000)).not.toThrow()
    const list = await deliveries(ep.id)
    expect(list.map((d) => [d.event_id, d.status, d.attempts])).toEqual([[events[2]!.id, 'succeeded', 1], [events[1]!.id, 'succeeded', 1], [events[0]!.id, 'succeeded', 4]])
    expect((await view(ep.id)).failing_since).toBeNull()
    receiver.stop()
  })

  it('a receiver that does not answer in time is retried', async () => {
    await freshAccount()
    const receiver = new WebhookReceiver()
    receiver.answer = async (_r, n) => {
      if (n === 1) await Bun.sleep(1000)
      return new Response('ok')
    }
    const ep = await endpoint(receiver)
    const event = record('backup.failed')
    await drain()
    const [first] = await deliveries(ep.id)
    expect(first).toMatchObject({ status: 'pending', attempts: 1, last_code: null })
    expect(first.last_error).toMatch(/No answer within/)
    h.clock.advance(5 * SECOND)
    await drain()
    expect(receiver.received.map((r) => r.id)).toEqual([event.id, event.id])
    expect((await deliveries(ep.id))[0]).toMatchObject({ status: 'succeeded', attempts: 2, last_code: 200 })
    receiver.stop()
  })

  it('429 with Retry-After: the next attempt waits as long as the receiver asked, not the schedule', async () => {
    await freshAccount()
    const receiver = new WebhookReceiver()
    receiver.answer = (_r, n) => (n === 1 ? new Response('slow down', { status: 429, headers: { 'retry-after': '120' } }) : new Response('ok'))
    const ep = await endpoint(receiver)
    record('payment.failed')
    await drain()
    const [first] = await deliveries(ep.id)
    expect(Date.parse(first.next_attempt_at)).toBe(h.clock.now() + 120 * SECOND)
    h.clock.advance(5 * SECOND)
    await drain()
    expect(receiver.received).toHaveLength(1)
    h.clock.advance(115 * SECOND)
    await drain()
    expect(receiver.received).toHaveLength(2)
    expect((await deliveries(ep.id))[0]).toMatchObject({ status: 'succeeded', attempts: 2 })
    receiver.stop()
  })

  it('410 disables the endpoint, with a webhook_endpoint.disabled event; nothing more is sent to it', async () => {
    await freshAccount()
    const receiver = new WebhookReceiver()
    receiver.answer = () => new Response('gone', { status: 410 })
    const ep = await endpoint(receiver)
    const first = record('site.suspended')
    const second = record('site.resumed')
    await drain()
    expect(receiver.received.map((r) => r.id)).toEqual([first.id])
    expect(await view(ep.id)).toMatchObject({ state: 'disabled', disabled_reason: 'gone' })
    const list = await deliveries(ep.id)
    expect(list.find((d) => d.event_id === second.id)).toMatchObject({ status: 'failed', attempts: 0 })
    const events = disabledEvents()
    expect(events).toHaveLength(1)
    expect(events[0]!.data).toMatchObject({ id: ep.id, state: 'disabled', disabled_reason: 'gone' })
    expect(JSON.stringify(events[0])).not.toContain(ep.secret)
    record('site.deleted')
    await drain()
    expect(receiver.received).toHaveLength(1)
    receiver.stop()
  })

  it('an endpoint failing for three days is disabled with an event; its deliveries are retried until then', async () => {
    await freshAccount()
    const receiver = new WebhookReceiver()
    receiver.answer = () => new Response('broken', { status: 500 })
    const ep = await endpoint(receiver)
    record('domain.renewal_failed')
    await drain()
    const started = h.clock.now()
    let steps = 0
    while ((await view(ep.id)).state === 'active' && steps < 20) {
      const [d] = await deliveries(ep.id)
      h.clock.set(Date.parse(d.next_attempt_at))
      await drain()
      steps++
    }
    const disabled = await view(ep.id)
    expect(disabled).toMatchObject({ state: 'disabled', disabled_reason: 'failing' })
    expect(h.clock.now() - started).toBeGreaterThanOrEqual(3 * 24 * 3600 * SECOND)
    // Attempts at 0, 5 s, 5 min 5 s, 35 min, 2 h 35, 7 h 35, 17 h 35, 27 h 35, 41 h 35, 61 h 35 and 85 h 35: past three days, it is disabled.
    expect(receiver.received.length).toBe(11)
    expect(disabledEvents().map((e) => e.data.disabled_reason)).toEqual(['failing'])
    receiver.stop()
  })

  it('rotate-secret: for 24 h every delivery is signed with the new and the old secret, then with the new one only', async () => {
    await freshAccount()
    const receiver = new WebhookReceiver()
    const ep = await endpoint(receiver)
    const rotated = await h.call('POST', `/api/v1/webhooks/${ep.id}/rotate-secret/`, { key: account.key })
    expect(rotated.status, rotated.text).toBe(200)
    const fresh = rotated.json.data.secret as string
    expect(fresh).not.toBe(ep.secret)
    expect(Date.parse(rotated.json.data.previous_secret_expires_at)).toBe(h.clock.now() + 24 * 3600 * SECOND)
    record('certificate.issued')
    await drain()
    const [both] = receiver.received
    expect(both!.signature.split(' ')).toHaveLength(2)
    expect(() => verifiedBy(fresh, both!, h.clock.now())).not.toThrow()
    expect(() => verifiedBy(ep.secret, both!, h.clock.now())).not.toThrow()
    h.clock.advance(24 * 3600 * SECOND + 1)
    record('certificate.renewal_failed')
    await drain()
    const after = receiver.received[1]!
    expect(after.signature.split(' ')).toHaveLength(1)
    expect(() => verifiedBy(fresh, after, h.clock.now())).not.toThrow()
    expect(() => verifiedBy(ep.secret, after, h.clock.now())).toThrow()
    // The secret is never in a view, a list or the log.
    const text = JSON.stringify([(await h.call('GET', '/api/v1/webhooks/', { key: account.key })).json, await view(ep.id), await deliveries(ep.id)])
    const logged = JSON.stringify(h.log.lines)
    for (const secret of [ep.secret, fresh]) {
      expect(text).not.toContain(secret)
      expect(logged).not.toContain(secret)
    }
    receiver.stop()
  })

  it('redeliver sends a delivery again with the same webhook-id', async () => {
    await freshAccount()
    const receiver = new WebhookReceiver()
    const ep = await endpoint(receiver)
    const event = record('subscription.renewed')
    await drain()
    const [d] = await deliveries(ep.id)
    const again = await h.call('POST', `/api/v1/webhooks/${ep.id}/deliveries/${d.id}/redeliver/`, { key: account.key })
    expect(again.status, again.text).toBe(200)
    expect(again.json.data).toMatchObject({ id: d.id, status: 'pending' })
    const twice = await h.call('POST', `/api/v1/webhooks/${ep.id}/deliveries/${d.id}/redeliver/`, { key: account.key })
    expect(twice.status).toBe(409)
    await drain()
    expect(receiver.received.map((r) => r.id)).toEqual([event.id, event.id])
    expect((await deliveries(ep.id))[0]).toMatchObject({ status: 'succeeded', attempts: 2 })
    receiver.stop()
  })
  it('a deleted account\'s events are no longer sent', async () => {
    await freshAccount()
    const receiver = new WebhookReceiver()
    await endpoint(receiver)
    const before = record('key.created')
    await drain()
    const gone = await h.call('DELETE', '/api/v1/account/delete/', { key: account.key, body: { confirm: 'DELETE' } })
    expect(gone.status, gone.text).toBe(200)
    record('site.deleted')
    await drain()
    await Bun.sleep(50)
    expect(receiver.received.map((r) => r.id)).toEqual([before.id])
    receiver.stop()
  })
  it('finished deliveries are kept 30 days, pending ones until they are sent', async () => {
    await freshAccount()
    const receiver = new WebhookReceiver()
    receiver.answer = (_r, n) => new Response(null, { status: n === 1 ? 200 : 500 })
    const ep = await endpoint(receiver)
    record('backup.completed')
    await drain()
    record('backup.failed')
    await drain()
    expect((await deliveries(ep.id)).map((d) => d.status)).toEqual(['pending', 'succeeded'])
    h.clock.advance(30 * 24 * 3600 * SECOND + 1)
    h.services.webhooks.prune(h.clock.now())
    expect((await deliveries(ep.id)).map((d) => d.status)).toEqual(['pending'])
    receiver.stop()
  })
})
