import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buyInProcess, HomeRuntime } from '../../../test/helpers/home-runtime'
import { inProcess, type InProcess } from '../../../test/helpers/in-process'
import { exampleOf } from '../openapi-examples'
import { mcpOverInProcess } from './handler-fixture'
import type { McpHandler } from './server'
import { CHANGE_HINTS, requestFor, type ToolDef, type ToolResult } from './tools'

/**
 * Both doors say what to do next in their own words (docs/mcp.md, "Messages name tools"): every
 * tool is called with the same bad arguments through MCP and through REST, and no MCP answer
 * names a route or the API's prefix, while REST answers name routes where MCP names tools.
 */
let h: InProcess
let mcp: McpHandler
let site: { slug: string; key: string }
let stranger: string
/** An account with no site, for calls with unknown ids (its deletion, by delete_account's example, harms no other call). */
let sweeper: string

const UNKNOWN_UUID = '123e4567-e89b-42d3-a456-426614174000'
/** A route as a REST message names one, or the API's own prefix. */
const ROUTE = /\b(GET|POST|DELETE|PUT|PATCH) \/|\/api\/v1/

beforeAll(async () => {
  h = inProcess({ runtime: new HomeRuntime(), env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '1000/hour', BERTH_RATE_LIMITS_REGISTER: '1000/hour', BERTH_RATE_LIMITS_CLAIM_REQUEST: '1000/hour', BERTH_RATE_LIMITS_CLAIM: '1000/hour', BERTH_RATE_LIMITS_CHECKOUT_POLL: '1000/minute' } })
  mcp = await mcpOverInProcess(h)
  site = await buyInProcess(h, 'svc_starter_monthly', 'doors')
  stranger = (await h.register()).key
  sweeper = (await h.register()).key
}, 60_000)
afterAll(async () => {
  mcp?.close()
  await h?.close()
})

/** One call through both doors: the MCP tool result and the REST answer of the same request. */
async function bothDoors(tool: ToolDef, args: Record<string, unknown>, key: string | null) {
  const auth = key ? `Bearer ${key}` : undefined
  const result: ToolResult = await mcp.call(tool.name, args, { authorization: auth, via: new Request('http://localhost/mcp/', { method: 'POST', headers: { 'x-forwarded-for': '198.51.100.7' } }) })
  const request = requestFor(tool, args, 'http://localhost', '/api/v1', { 'x-forwarded-for': '198.51.100.8', ...(auth ? { authorization: auth } : {}) })
  const url = new URL(request.url)
  const rest = await h.call(request.method, `${url.pathname}${url.search}`, { rawBody: request.method === "GET" ? undefined : await request.text(), headers: Object.fromEntries(request.headers as unknown as Iterable<[string, string]>) })
  return { mcp: result, rest }
}

/** Arguments for a tool: the path parameters given, the rest from the schema's examples. */
function argsFor(tool: ToolDef, path: Record<string, string>, withBody: boolean): Record<string, unknown> {
  const args: Record<string, unknown> = {}
  for (const name of tool.pathParams) args[name] = path[name] ?? (name === 'key_id' && tool.name.includes('ssh') ? 'a'.repeat(64) : name.endsWith('_id') ? UNKNOWN_UUID : `no-such-${name.replace(/_/g, '-')}`)
  if (withBody) for (const name of [...tool.bodyParams, ...tool.queryParams]) if (tool.inputSchema.required.includes(name)) args[name] = exampleOf(tool.inputSchema.properties[name], name)
  return args
}

interface Seen { tool: string; mcp: string; rest: string }

/** Checks one pair of answers and returns the messages, when both are errors. */
function checkPair(tool: ToolDef, pair: Awaited<ReturnType<typeof bothDoors>>): Seen | null {
  const text = pair.mcp.content[0]!.text
  expect(text, `${tool.name}: ${text}`).not.toMatch(ROUTE)
  if (!pair.mcp.isError) return null
  const mcpError = (pair.mcp.structuredContent as { error: { code: string; message: string } }).error
  expect(pair.rest.json.ok, `${tool.name}: REST ${pair.rest.text.slice(0, 200)}`).toBe(false)
  expect(mcpError.code, tool.name).toBe(pair.rest.json.error.code)
  return { tool: tool.name, mcp: mcpError.message, rest: pair.rest.json.error.message }
}

/** Where the two doors' messages differ, REST names a route and MCP a tool in its place. */
function expectDoorWords(seen: Seen[], toolNames: string[]): void {
  for (const s of seen) {
    if (s.mcp === s.rest) continue
    expect(s.rest, `${s.tool} REST`).toMatch(ROUTE)
    const words = new Set(s.mcp.split(/[^a-z_]+/))
    expect(toolNames.some((name) => words.has(name)), `${s.tool} MCP names no tool: ${s.mcp}`).toBe(true)
  }
}

describe('every tool, through both doors', () => {
  it('names no route in an MCP answer: no key, a stranger\'s key, unknown ids, example bodies', async () => {
    const seen: Seen[] = []
    const tools = mcp.tools()
    expect(tools.length).toBeGreaterThan(50)
    for (const tool of tools) {
      const calls: [Record<string, unknown>, string | null][] = [
        [argsFor(tool, { tenant_slug: site.slug }, true), null],
        [argsFor(tool, { tenant_slug: site.slug }, true), stranger],
        [argsFor(tool, {}, false), sweeper],
        [argsFor(tool, {}, true), sweeper],
      ]
      for (const [args, key] of calls) {
        const s = checkPair(tool, await bothDoors(tool, args, key))
        if (s) seen.push(s)
      }
    }
    expectDoorWords(seen, tools.map((t) => t.name))
    // The stranger's and the unknown slugs' 404s point to list_sites, the unknown ids to their lists.
    const named = seen.filter((s) => s.mcp !== s.rest)
    expect(named.length).toBeGreaterThan(40)
    expect(named.some((s) => s.mcp.includes('list_sites') && /GET \/sites\//.test(s.rest))).toBe(true)
    expect(named.some((s) => s.mcp.includes('list_keys'))).toBe(true)
    expect(named.some((s) => s.mcp.includes('list_plans'))).toBe(true)
  }, 120_000)

  it('names the next step as a tool on the site: missing files, folders in the way, unknown ids, a deleted site', async () => {
    const tool = (name: string) => mcp.tools().find((t) => t.name === name)!
    const s = { tenant_slug: site.slug }
    const must = async (name: string, args: Record<string, unknown>, mcpSays: RegExp, restSays: RegExp) => {
      const pair = await bothDoors(tool(name), { ...s, ...args }, site.key)
      const seen = checkPair(tool(name), pair)
      expect(seen, `${name}: ${pair.mcp.content[0]!.text}`).not.toBeNull()
      expect(seen!.mcp, name).toMatch(mcpSays)
      expect(seen!.rest, name).toMatch(restSays)
    }
    expect((await h.call('POST', `/api/v1/sites/${site.slug}/files/write/`, { key: site.key, body: { path: 'public/page.txt', content: 'hello' } })).status).toBe(200)
    const slug = site.slug
    await must('read_file', { path: 'public/missing.html' }, /list_files with path=<folder>/, new RegExp(`GET /sites/${slug}/files/ with path=<folder>`))
    await must('read_file', { path: 'public' }, /list it with list_files and path=public/, new RegExp(`GET /sites/${slug}/files/ and path=public`))
    await must('list_files', { path: 'public/page.txt' }, /read it with read_file/, new RegExp(`GET /sites/${slug}/files/read/`))
    await must('make_directory', { path: 'public/page.txt' }, /delete_file/, new RegExp(`POST /sites/${slug}/files/delete/`))
    await must('remove_ssh_key', { key_id: 'abc' }, /list_ssh_keys.*64 hex/, /GET \/sites\/\{tenant_slug\}\/ssh\/keys\/.*64 hex/)
    await must('get_snapshot', { snapshot_id: UNKNOWN_UUID }, /list_snapshots/, new RegExp(`GET /sites/${slug}/snapshots/`))
    await must('get_deployment', { deployment_id: UNKNOWN_UUID }, /list_deployments/, new RegExp(`GET /sites/${slug}/deployments/`))
    await must('change_site_dns', { action: 'delete', type: 'TXT', subdomain: 'nothing-here' }, /get_site_dns/, new RegExp(`GET /sites/${slug}/dns/`))
    await must('write_file', { path: 'public/big.txt', content: 'x'.repeat(1024 * 1024 + 1) }, /upload_file/, new RegExp(`POST /sites/${slug}/files/upload/`))
    await must('scale_site', { new_plan: 'no-such-plan' }, /list_plans/, /GET \/plans\//)
    // The MCP call deletes the site; the REST one is already refused as the next call is.
    expect((await bothDoors(tool('delete_site'), s, site.key)).mcp.isError).toBeFalsy()
    await must('delete_site', {}, /restore_site/, new RegExp(`POST /sites/${slug}/restore/`))
  }, 60_000)
})

describe('tool annotations', () => {
  it('every tool that changes something has reviewed hints; reads are read-only', () => {
    for (const t of mcp.tools()) {
      if (t.method === 'GET') {
        expect(t.annotations, t.name).toMatchObject({ readOnlyHint: true, destructiveHint: false, idempotentHint: true })
        continue
      }
      expect(CHANGE_HINTS[t.operationId], `${t.name} has no entry in CHANGE_HINTS`).toBeDefined()
      expect(t.annotations.readOnlyHint, t.name).toBe(false)
    }
    const hints = (name: string) => mcp.tools().find((t) => t.name === name)!.annotations
    // Overwrite a site's files: destructive.
    for (const name of ['restore_snapshot', 'restore_backup', 'write_file', 'upload_file', 'delete_file', 'generate_content']) expect(hints(name).destructiveHint, name).toBe(true)
    // Money and outside services.
    for (const name of ['complete_checkout', 'register_domain', 'scale_site']) expect(hints(name)).toMatchObject({ destructiveHint: true, openWorldHint: true })
    for (const name of ['search_domains', 'generate_content', 'update_domain_settings']) expect(hints(name).openWorldHint, name).toBe(true)
    // restore_site cancels a scheduled deletion: it brings the site back and overwrites nothing.
    expect(hints('restore_site')).toMatchObject({ destructiveHint: false, idempotentHint: true })
    // toggle_module without `enabled` flips the module: a repeat undoes the first call.
    expect(hints('toggle_module').idempotentHint).toBe(false)
  })
})
