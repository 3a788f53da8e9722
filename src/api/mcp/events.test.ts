import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buyInProcess } from '../../../test/helpers/home-runtime'
import { inProcess, type InProcess } from '../../../test/helpers/in-process'
import type { EventType } from '../../domain/events'
import { eventsDoor } from './events'
import { mcpOverInProcess } from './handler-fixture'
import type { McpHandler } from './server'

/**
 * The event log over MCP (issue 41, Deliver items 2 and 4): the SDK's own client, over HTTP on a
 * real socket, to the MCP door of the in-process API. A client subscribed to berth://events gets
 * notifications/resources/updated as its account's events are recorded (and none of another
 * account's), wait_for_event returns the event, and the subscription ends with the session.
 */
let h: InProcess
let mcp: McpHandler
let server: ReturnType<typeof Bun.serve>
type Site = { slug: string; key: string; siteId: string; accountId: string }
let mine: Site
let theirs: Site
const clients: Client[] = []

beforeAll(async () => {
  h = inProcess({ env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '1000/hour' } })
  server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => mcp.handle(request) })
  mcp = await mcpOverInProcess(h, {
    localPorts: () => ({ http: server.port!, https: null }),
    siteUrl: `http://127.0.0.1:${server.port}`,
    events: eventsDoor(h.services.eventFeed, h.services.keys),
  })
  const accountOf = async (key: string) => (await h.call('GET', '/api/v1/auth/whoami/', { key })).json.data.user.id as string
  const [a, b] = await Promise.all([buyInProcess(h, 'svc_starter_monthly', 'mev'), buyInProcess(h, 'svc_starter_monthly', 'mew')])
  mine = { ...a, accountId: await accountOf(a.key) }
  theirs = { ...b, accountId: await accountOf(b.key) }
}, 60_000)
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})))
  mcp?.close()
  server?.stop(true)
  await h?.close()
})

async function connect(key: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport; updates: string[] }> {
  const client = new Client({ name: 'events-test', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${server.port}/mcp/`), { requestInit: { headers: { authorization: `Bearer ${key}` } } })
  const updates: string[] = []
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updates.push(n.params.uri)
  })
  await client.connect(transport)
  clients.push(client)
  return { client, transport, updates }
}

const record = (site: Site, type: EventType, data: Record<string, unknown> = {}) =>
  h.services.events.record({ type, accountId: site.accountId, siteId: site.siteId, siteSlug: site.slug, data })
const until = async (check: () => boolean, ms = 3000) => {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error('not within the time')
    await new Promise((r) => setTimeout(r, 10))
  }
}
const json = (result: any) => JSON.parse(result.content[0].text)

describe('the events resource', () => {
  it('is listed, with its per-site template, and the server says it can be subscribed to', async () => {
    const { client } = await connect(mine.key)
    expect(client.getServerCapabilities()?.resources?.subscribe).toBe(true)
    expect((await client.listResources()).resources.map((r) => r.uri)).toContain('berth://events')
    expect((await client.listResourceTemplates()).resourceTemplates.map((r) => r.uriTemplate)).toContain('berth://sites/{tenant_slug}/events')
  })

  it("notifies a subscribed client when an event of its account is recorded, never for another account's; reading gives the newest", async () => {
    const me = await connect(mine.key)
    const other = await connect(theirs.key)
    await me.client.subscribeResource({ uri: 'berth://events' })
    await me.client.subscribeResource({ uri: `berth://sites/${mine.slug}/events` })
    await other.client.subscribeResource({ uri: 'berth://events' })
    // The GET stream the notifications come on is opened by the client after initialize.
    await new Promise((r) => setTimeout(r, 200))

    const made = record(mine, 'deployment.succeeded', { id: 'dep-1', status: 'succeeded' })
    await until(() => me.updates.length >= 2)
    expect(me.updates.sort()).toEqual(['berth://events', `berth://sites/${mine.slug}/events`])
    expect(other.updates).toEqual([])

    const read = await me.client.readResource({ uri: 'berth://events' })
    const shown = JSON.parse((read.contents[0] as { text: string }).text)
    expect(shown.events.at(-1)).toMatchObject({ id: made.id, type: 'deployment.succeeded', site: mine.slug, data: { id: 'dep-1' } })

    record(theirs, 'site.down')
    await until(() => other.updates.length === 1)
    expect(me.updates).toHaveLength(2)

    // Unsubscribed: no more for that URI.
    await me.client.unsubscribeResource({ uri: `berth://sites/${mine.slug}/events` })
    record(mine, 'site.up')
    await until(() => me.updates.length === 3)
    await new Promise((r) => setTimeout(r, 100))
    expect(me.updates.slice(2)).toEqual(['berth://events'])
  })

  it("refuses another account's site, and a session without a key", async () => {
    const me = await connect(mine.key)
    await expect(me.client.subscribeResource({ uri: `berth://sites/${theirs.slug}/events` })).rejects.toThrow(`No site '${theirs.slug}'`)
    await expect(me.client.readResource({ uri: `berth://sites/${theirs.slug}/events` })).rejects.toThrow(`No site '${theirs.slug}'`)
    const anonymous = new Client({ name: 'anonymous', version: '1.0.0' })
    await anonymous.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${server.port}/mcp/`)))
    clients.push(anonymous)
    await expect(anonymous.subscribeResource({ uri: 'berth://events' })).rejects.toThrow('API key')
  })

  it('ends the subscriptions with the session', async () => {
    const before = h.services.events.listening
    const me = await connect(mine.key)
    await me.client.subscribeResource({ uri: 'berth://events' })
    expect(h.services.events.listening).toBe(before + 1)
    await me.transport.terminateSession()
    await until(() => h.services.events.listening === before)
  })
})

describe('the tools', () => {
  it('wait_for_event returns the event recorded while it waits; list_events reads from a cursor', async () => {
    const me = await connect(mine.key)
    const start = json(await me.client.callTool({ name: 'list_events', arguments: { limit: 100 } }))
    const cursor = start.data?.next_after ?? start.next_after
    const waiting = me.client.callTool({ name: 'wait_for_event', arguments: { after: cursor, types: 'site.suspended', timeout_seconds: 10 } })
    await new Promise((r) => setTimeout(r, 100))
    const made = record(mine, 'site.suspended', { status: 'suspended' })
    const got = await waiting
    expect(got.isError, JSON.stringify(got)).toBeFalsy()
    expect((got.structuredContent as any).event).toMatchObject({ id: made.id, type: 'site.suspended', site: mine.slug })
    const listed = await me.client.callTool({ name: 'list_events', arguments: { after: cursor } })
    expect((listed.structuredContent as any).events.map((e: { id: string }) => e.id)).toEqual([made.id])
  })

  it('wait_for_event cancelled by its client lets go of its long poll at once (not at timeout_seconds)', async () => {
    const me = await connect(mine.key)
    const standing = h.services.events.listening
    const cancel = new AbortController()
    const waiting = me.client.callTool({ name: 'wait_for_event', arguments: { types: 'site.suspended', after: json(await me.client.callTool({ name: 'list_events', arguments: { limit: 100 } })).next_after, timeout_seconds: 60 } }, undefined, { signal: cancel.signal })
    await until(() => h.services.events.listening === standing + 1)
    cancel.abort()
    await expect(waiting).rejects.toThrow()
    await until(() => h.services.events.listening === standing, 2000)
  })

  it('a bad cursor is the tool error the REST answer is, with its param', async () => {
    const me = await connect(mine.key)
    const bad = await me.client.callTool({ name: 'list_events', arguments: { after: 'evt_000000000000000000000000' } })
    expect(bad.isError).toBe(true)
    expect(JSON.stringify(bad)).toContain('"param":"after"')
  })
})
