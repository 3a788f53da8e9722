import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startBerth, type Berth } from './helpers/binary'
import { uniqueSlug, viaEdge } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * An agent that knows only the site URL buys and runs a site through MCP alone, with the SDK's
 * own client against the compiled binary.
 */
let berth: Berth
const clients: Client[] = []

async function connect(key?: string): Promise<Client> {
  const client = new Client({ name: 'berth-e2e', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL(`${berth.url}/mcp/`), key ? { requestInit: { headers: { authorization: `Bearer ${key}` } } } : undefined)
  await client.connect(transport)
  clients.push(client)
  return client
}

type Result = { isError?: boolean; structuredContent?: any; content: { type: string; text?: string }[] }
async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const result = (await client.callTool({ name, arguments: args })) as Result
  if (result.isError) throw new Error(`${name}: ${result.content[0]?.text}`)
  return result.structuredContent
}

beforeAll(async () => {
  berth = await startBerth()
  instanceOf(berth)
})

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})))
  await berth?.dispose()
  await removeInstanceSites(berth)
})

describe('MCP at /mcp/', () => {
  let owner: Client
  let key: string
  const slug = uniqueSlug('mcp')

  it('initializes, and lists one tool per operation of openapi.json, with annotations and described inputs', async () => {
    const anonymous = await connect()
    expect(anonymous.getServerVersion()?.name).toBe('berth')
    expect(anonymous.getInstructions()).toContain('list_plans')
    const { tools } = await anonymous.listTools()
    const doc = await (await fetch(`${berth.url}/api/v1/openapi.json`)).json()
    const operations = Object.values(doc.paths as Record<string, Record<string, { operationId: string }>>).flatMap((ops) => Object.values(ops).map((o) => o.operationId))
    const snake = (id: string) => id.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)
    expect(tools.map((t) => t.name).sort()).toEqual(operations.map(snake).sort())
    for (const tool of tools) {
      expect(tool.annotations, tool.name).toMatchObject({ readOnlyHint: expect.any(Boolean), destructiveHint: expect.any(Boolean), idempotentHint: expect.any(Boolean) })
      expect(tool.inputSchema.type).toBe('object')
      for (const [name, schema] of Object.entries(tool.inputSchema.properties ?? {})) expect((schema as { description?: string }).description, `${tool.name}.${name}`).toBeTruthy()
    }
    expect(tools.find((t) => t.name === 'list_plans')!.annotations!.readOnlyHint).toBe(true)
    expect(tools.find((t) => t.name === 'delete_site')!.annotations!.destructiveHint).toBe(true)
    expect(tools.find((t) => t.name === 'complete_checkout')!.annotations!.destructiveHint).toBe(true)
    expect(tools.find((t) => t.name === 'write_file')!.inputSchema.required).toEqual(expect.arrayContaining(['tenant_slug', 'path', 'content']))
  })

  it('buys a site with tools only, writes a file the edge then serves, and reads the access log', async () => {
    const anonymous = await connect()
    const registered = await call(anonymous, 'register', {})
    key = registered.api_key
    owner = await connect(key)
    const plans = await call(owner, 'list_plans')
    const sku = plans.items.find((p: { slug: string }) => p.slug === 'starter').skus.monthly
    const checkout = await call(owner, 'create_checkout', { sku })
    await call(owner, 'update_checkout', { checkout_id: checkout.id, checkout_secret: checkout.checkout_secret, requested_slug: slug })
    const done = await call(owner, 'complete_checkout', { checkout_id: checkout.id, checkout_secret: checkout.checkout_secret, payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' })
    expect(done.status).toBe('completed')
    const deadline = Date.now() + 60_000
    let site = await call(owner, 'get_site', { tenant_slug: slug })
    while (site.status !== 'active') {
      if (Date.now() > deadline) throw new Error(`site stayed ${site.status}`)
      await Bun.sleep(200)
      site = await call(owner, 'get_site', { tenant_slug: slug })
    }
    await call(owner, 'write_file', { tenant_slug: slug, path: 'public/hello.html', content: '<h1>made over MCP</h1>' })
    const page = await viaEdge(berth.url, slug, '/hello.html')
    expect(page.status).toBe(200)
    expect(page.text).toBe('<h1>made over MCP</h1>')
    const logs = await call(owner, 'get_site_logs', { tenant_slug: slug, type: 'access', lines: 50 })
    expect(logs.lines.join('\n')).toContain('/hello.html')
    const sites = await owner.readResource({ uri: 'berth://sites' })
    expect((sites.contents[0] as { text: string }).text).toContain(slug)
  }, 120_000)

  it('recovers a key through the claim tools: the token is written into the site, traded for a site key', async () => {
    const anonymous = await connect()
    const requested = await call(anonymous, 'request_claim', { site_slug: slug })
    expect(requested.token_path).toBe('~/.svc/.claim_token')
    const token = (await call(owner, 'read_file', { tenant_slug: slug, path: '.svc/.claim_token' })).content.trim()
    const claimed = await call(anonymous, 'claim_key', { claim_token: token })
    expect(claimed).toMatchObject({ site_slug: slug, site_scoped: true })
    const siteClient = await connect(claimed.api_key)
    expect((await call(siteClient, 'get_site', { tenant_slug: slug })).slug).toBe(slug)
  })

  it("answers another account NOT_FOUND for that site through every site tool, naming tools in its messages", async () => {
    const anonymous = await connect()
    const stranger = await connect((await call(anonymous, 'register', {})).api_key)
    const { tools } = await stranger.listTools()
    const siteTools = tools.filter((t) => 'tenant_slug' in (t.inputSchema.properties ?? {}))
    expect(siteTools.length).toBeGreaterThan(25)
    for (const tool of siteTools) {
      const args: Record<string, unknown> = { tenant_slug: slug }
      for (const name of tool.inputSchema.required ?? []) if (name !== 'tenant_slug') args[name] = name.endsWith('_id') ? crypto.randomUUID() : 'x'
      const result = (await stranger.callTool({ name: tool.name, arguments: args })) as Result
      expect(result.isError, tool.name).toBe(true)
      expect(result.structuredContent?.error?.code, tool.name).toBe('NOT_FOUND')
    }
    const missing = (await stranger.callTool({ name: 'get_site', arguments: { tenant_slug: slug } })) as Result
    expect(missing.structuredContent.error.message).toContain('list_sites')
  }, 60_000)

  it('answers a call without a key with UNAUTHORIZED naming the register tool, and ends a session on DELETE', async () => {
    const anonymous = await connect()
    const result = (await anonymous.callTool({ name: 'list_sites', arguments: {} })) as Result
    expect(result.isError).toBe(true)
    expect(result.structuredContent.error).toMatchObject({ code: 'UNAUTHORIZED' })
    expect(result.structuredContent.error.message).toContain('register')
    const transport = (anonymous as unknown as { transport: StreamableHTTPClientTransport }).transport
    const sessionId = transport.sessionId!
    await transport.terminateSession()
    const after = await fetch(`${berth.url}/mcp/`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }, body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }) })
    expect(after.status).toBe(404)
  })
})
