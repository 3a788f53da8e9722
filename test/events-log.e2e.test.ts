import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * The event log end to end on the compiled binary (issue 41, Deliver items 2 and 4): an MCP client
 * of the SDK subscribed to its events hears of its site's deployment when it finishes, while a
 * long poll (GET /events/?wait=) held open on the real listener and wait_for_event both answer
 * with that same event; after a kill -9 and a restart, the log still holds every event it showed;
 * and stopping Berth answers a held long poll at once.
 */
let b: Berth
let key = ''
let slug = ''
let client: Client
const updates: { uri: string; at: number }[] = []

beforeAll(async () => {
  b = await startBerth({ env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour' } })
  instanceOf(b)
  slug = uniqueSlug('evl')
  const { data } = await buyDirect(b.url, { slug, sku: 'svc_starter_monthly' })
  key = data.api_key as string
  expect(await waitForSite(b.url, key, slug, 120_000)).toBe('active')
  client = new Client({ name: 'events-e2e', version: '1.0.0' })
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updates.push({ uri: n.params.uri, at: Date.now() })
  })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${b.url}/mcp/`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }))
}, 180_000)
afterAll(async () => {
  await client?.close().catch(() => {})
  await b?.stop()
  await removeInstanceSites(b)
  await b?.dispose()
}, 60_000)

describe('the event log on the binary', () => {
  it("a subscribed MCP client, a long poll and wait_for_event all hear of the site's deployment; kill -9 loses none of the events", async () => {
    const before = await api(b.url, 'GET', '/events/?limit=100', { key })
    expect(before.status, before.text).toBe(200)
    expect(before.json.data.events.map((e: { type: string }) => e.type)).toContain('site.active')
    const cursor = before.json.data.next_after as string

    await client.subscribeResource({ uri: `berth://sites/${slug}/events` })
    // A long poll on the real listener, and the tool, both from the cursor, both for the deployment only.
    const polled = api(b.url, 'GET', `/events/?after=${cursor}&types=deployment.succeeded,deployment.failed&wait=60`, { key }).then((r) => ({ r, at: Date.now() }))
    const waited = client.callTool({ name: 'wait_for_event', arguments: { after: cursor, types: 'deployment.succeeded,deployment.failed', timeout_seconds: 60 } })
    await Bun.sleep(300)

    expect((await api(b.url, 'POST', `/sites/${slug}/files/write/`, { key, body: { path: 'public/index.html', content: '<h1>events</h1>' } })).status).toBe(200)
    const deploy = await api(b.url, 'POST', `/sites/${slug}/deploy/`, { key })
    expect([200, 202], deploy.text).toContain(deploy.status)

    const { r: poll, at: polledAt } = await polled
    expect(poll.status, poll.text).toBe(200)
    expect(poll.json.data.events).toHaveLength(1)
    const event = poll.json.data.events[0]
    expect(event).toMatchObject({ type: 'deployment.succeeded', site: slug, data: { id: deploy.json.data.id, status: 'succeeded' } })
    const tool = await waited
    expect(tool.isError, JSON.stringify(tool)).toBeFalsy()
    expect((tool.structuredContent as { event: { id: string } }).event.id).toBe(event.id)
    // The notification came for the subscribed URI, within a second of the poll's answer.
    for (let i = 0; i < 50 && !updates.some((u) => u.uri === `berth://sites/${slug}/events`); i++) await Bun.sleep(100)
    const heard = updates.find((u) => u.uri === `berth://sites/${slug}/events`)
    expect(heard, JSON.stringify(updates)).toBeDefined()
    expect(Math.abs(heard!.at - polledAt)).toBeLessThan(1000)

    // Everything the log showed is still there after a kill -9 and a restart, in the same order.
    const shown = await api(b.url, 'GET', '/events/?limit=100', { key })
    await b.kill9()
    await b.restart()
    const after = await api(b.url, 'GET', '/events/?limit=100', { key })
    expect(after.status, after.text).toBe(200)
    const ids = (p: typeof shown) => p.json.data.events.map((e: { id: string }) => e.id)
    expect(ids(after).slice(0, ids(shown).length)).toEqual(ids(shown))
    expect(ids(shown)).toContain(event.id)
  }, 120_000)

  it('a stop answers the long polls it holds at once (an empty page), instead of waiting them out', async () => {
    const last = (await api(b.url, 'GET', '/events/?limit=100', { key })).json.data.next_after as string
    const polled = api(b.url, 'GET', `/events/?after=${last}&wait=60`, { key })
    await Bun.sleep(300)
    const stopping = Date.now()
    await b.stop()
    const stoppedIn = Date.now() - stopping
    const poll = await polled
    expect(poll.status, poll.text).toBe(200)
    expect(poll.json.data).toEqual({ events: [], has_more: false, next_after: last })
    // Well under the 8 s the stop gives requests in flight before cutting them off.
    expect(stoppedIn).toBeLessThan(4000)
    expect(b.output()).not.toContain('requests still in flight at stop were cut off')
  }, 60_000)
})
