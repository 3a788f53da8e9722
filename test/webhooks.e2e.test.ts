import { afterAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { verifiedBy, WebhookReceiver } from './helpers/webhook-receiver'

/**
 * Webhooks on the compiled binary (issue 41, item 5): an endpoint on a real receiver (let in by
 * outbound.allow_networks), events made by real state changes (keys created and revoked through
 * the API), the receiver down while more happen, Berth killed with kill -9 with those deliveries
 * pending, the receiver back and Berth started again: every event arrives, once each, in order,
 * each verified with the `standardwebhooks` package.
 */
let berth: Berth | undefined
const receivers: WebhookReceiver[] = []
afterAll(async () => {
  for (const r of receivers) await r.stop()
  await berth?.dispose()
}, 60_000)

async function until<T>(what: string, fn: () => Promise<T> | T, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (ok(v)) return v
    if (Date.now() > end) throw new Error(`${what}: still ${JSON.stringify(v)}`)
    await Bun.sleep(100)
  }
}

describe('webhooks on the binary', () => {
  it('deliveries pending at a kill -9 all arrive after the restart, in order, signed', async () => {
    berth = await startBerth({ env: { BERTH_OUTBOUND_ALLOW_NETWORKS: '127.0.0.0/8' } })
    const b = berth
    const first = new WebhookReceiver()
    receivers.push(first)
    const registered = await api(b.url, 'POST', '/auth/register/', { body: {} })
    expect(registered.status, registered.text).toBe(201)
    const key = registered.json.data.api_key as string
    const made = await api(b.url, 'POST', '/webhooks/', { key, body: { url: first.url(), types: ['key.created', 'key.revoked'] } })
    expect(made.status, made.text).toBe(201)
    const { id: endpoint, secret } = made.json.data as { id: string; secret: string }
    const deliveries = async () => (await api(b.url, 'GET', `/webhooks/${endpoint}/deliveries/?limit=100`, { key })).json.data as any[]

    // Receiver up: the first event arrives.
    const one = await api(b.url, 'POST', '/keys/create/', { key, body: { name: 'one', scopes: ['read'] } })
    expect(one.status, one.text).toBe(201)
    await first.until(1, 10_000)

    // Receiver down: three more happen; the first of them fails and waits, the others wait behind it.
    const port = first.port
    await first.stop()
    const two = await api(b.url, 'POST', '/keys/create/', { key, body: { name: 'two', scopes: ['read'] } })
    await api(b.url, 'POST', '/keys/create/', { key, body: { name: 'three', scopes: ['read'] } })
    await api(b.url, 'POST', `/keys/${two.json.data.key_id}/revoke/`, { key })
    const pending = await until('a failed attempt', deliveries, (list) => list.some((d) => d.attempts >= 1 && d.status === 'pending'))
    expect(pending.filter((d) => d.status === 'pending')).toHaveLength(3)

    await b.kill9()
    const back = new WebhookReceiver(port)
    receivers.push(back)
    await b.restart()

    const order = (await deliveries()).reverse()
    expect(order.map((d) => d.event_type)).toEqual(['key.created', 'key.created', 'key.created', 'key.revoked'])
    await back.until(3, 30_000).catch(async (err) => {
      throw new Error(`${(err as Error).message}; deliveries ${JSON.stringify(await deliveries())}; berth said ${b.output().slice(-3000)}`)
    })
    const ids = order.map((d) => d.event_id)
    expect([first.received[0]!.id, ...back.received.map((r) => r.id)]).toEqual(ids)
    for (const r of [first.received[0]!, ...back.received]) {
      const payload = verifiedBy(secret, r, Date.now()) as any
      expect(payload.id).toBe(r.id)
      expect(['key.created', 'key.revoked']).toContain(payload.type)
      expect(r.body).not.toContain(key)
    }
    // The receiver has the last request a moment before Berth has written its answer.
    await until('every delivery succeeded', deliveries, (list) => list.every((d) => d.status === 'succeeded'), 5_000)
    expect((await deliveries()).map((d) => d.attempts).reverse().slice(0, 1)).toEqual([1])
  }, 60_000)
})
