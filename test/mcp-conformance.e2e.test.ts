import { spawnSync } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startBerth, type Berth } from './helpers/binary'

/**
 * Independent tools against the compiled binary's MCP endpoint: the official conformance suite
 * (@modelcontextprotocol/conformance, its server scenarios) and a scripted session with the MCP
 * Inspector's CLI. The scenarios left out need fixture tools, resources or prompts of the SDK's
 * "everything" test server (test_image_content, test://static-text, ...) or server-to-client
 * requests Berth does not make; docs/mcp.md names each with the reason.
 */
const ROOT = resolve(import.meta.dirname, '..')
const SCENARIOS = [
  'server-initialize', 'ping', 'logging-set-level', 'completion-complete', 'tools-list',
  'resources-list', 'prompts-list', 'server-sse-multiple-streams', 'dns-rebinding-protection',
]
let berth: Berth
let mcpUrl: string

beforeAll(async () => {
  berth = await startBerth()
  // The DNS-rebinding scenario needs a server URL on localhost.
  mcpUrl = `http://localhost:${berth.port}/mcp/`
})
afterAll(() => berth?.dispose())

describe('MCP conformance suite (server scenarios) on the binary', () => {
  it.each(SCENARIOS)('%s passes', (scenario) => {
    // The suite needs Node 22's fs.globSync; Bun runs it.
    const run = spawnSync(process.execPath, [join(ROOT, 'node_modules/@modelcontextprotocol/conformance/dist/index.js'), 'server', '--url', mcpUrl, '--scenario', scenario], {
      cwd: mkdtempSync(join(tmpdir(), 'berth-conformance-')), encoding: 'utf8', timeout: 60_000,
    })
    const out = `${run.stdout}\n${run.stderr}`
    expect(out, out).toMatch(/Passed: (\d+)\/\1, 0 failed/)
    expect(run.status, out).toBe(0)
  }, 90_000)
})

describe('a scripted MCP Inspector CLI session on the binary', () => {
  /** Runs the Inspector's CLI; it finds its own package.json relative to the working folder. */
  const inspector = (...args: string[]) => {
    const build = join(ROOT, 'node_modules/@modelcontextprotocol/inspector-cli/build')
    const run = spawnSync('node', [join(build, 'index.js'), mcpUrl, '--transport', 'http', ...args], { cwd: build, encoding: 'utf8', timeout: 60_000 })
    if (run.status !== 0) throw new Error(`inspector ${args.join(' ')} exited ${run.status}: ${run.stderr}`)
    return JSON.parse(run.stdout)
  }

  it('lists tools, calls one, reads a resource and gets a prompt', () => {
    const { tools } = inspector('--method', 'tools/list')
    expect(tools.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining(['list_plans', 'create_checkout', 'write_file']))
    const plan = inspector('--method', 'tools/call', '--tool-name', 'get_plan', '--tool-arg', 'plan_slug=starter')
    expect(plan.structuredContent.slug).toBe('starter')
    const missing = inspector('--method', 'tools/call', '--tool-name', 'get_plan', '--tool-arg', 'plan_slug=no-such-plan')
    expect(missing.isError).toBe(true)
    expect(missing.structuredContent.error.code).toBe('NOT_FOUND')
    const plans = inspector('--method', 'resources/read', '--uri', 'berth://plans')
    expect(JSON.parse(plans.contents[0].text).map((p: { slug: string }) => p.slug)).toContain('starter')
    const prompt = inspector('--method', 'prompts/get', '--prompt-name', 'buy_a_site', '--prompt-args', 'slug=acme-shop')
    expect(prompt.messages[0].content.text).toContain('acme-shop')
  }, 120_000)
})
