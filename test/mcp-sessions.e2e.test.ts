import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startBerth, type Berth } from './helpers/binary'

/**
 * The session flood of issue 23: `initialize` needs no key, and each session holds an MCP server
 * in memory. 11,000 unauthenticated `initialize` requests, from 49 loopback addresses
 * (127.0.0.2 to 127.0.0.50, so that the limit per address does not hide the cap), against the
 * compiled binary with its default limits. Before the fix every one got a session and Berth grew
 * by about 33 KB a session (97 MB to 475 MB for 11,500).
 */
let berth: Berth
let key: string

const FLOOD = 11_000
const SOURCES = Array.from({ length: 49 }, (_, i) => `127.0.0.${i + 2}`)
/** Requests in flight at once. */
const CONCURRENCY = 64
/** What the flood may add to Berth's resident memory; before the fix it added over 300 MB. */
const RSS_GROWTH_LIMIT_MB = 120

const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'flood', version: '1' } } })

/** Berth's resident memory in MB, from /proc (what the issue measured). */
function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'))!
  return Number(/(\d+)/.exec(line)![1]) / 1024
}

interface Answer { status: number; retryAfter: string | undefined; body: string }

/** One POST of `initialize` from `localAddress` (Bun's fetch cannot pick its source address). */
function initialize(localAddress: string, agent: http.Agent): Promise<Answer> {
  return new Promise((done, fail) => {
    const req = http.request({
      host: '127.0.0.1', port: berth.port, path: '/mcp/', method: 'POST', localAddress, agent,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': Buffer.byteLength(INITIALIZE) },
    }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (body += c))
      res.on('end', () => done({ status: res.statusCode!, retryAfter: res.headers['retry-after'] as string | undefined, body }))
    })
    req.on('error', fail)
    req.end(INITIALIZE)
  })
}

beforeAll(async () => {
  berth = await startBerth()
  const registered = await (await fetch(`${berth.url}/api/v1/auth/register/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json()
  key = registered.data.api_key
})
afterAll(() => berth?.dispose())

describe('a flood of unauthenticated MCP sessions', () => {
  it('is refused past the cap (503) and per address (429), with memory bounded, the API up and keyed agents served', async () => {
    // The first initialize loads the SDK: memory is measured from there.
    expect((await initialize('127.0.0.1', new http.Agent())).status).toBe(200)
    const before = rssMb(berth.proc.pid)
    const agents = new Map(SOURCES.map((a) => [a, new http.Agent({ keepAlive: true, maxSockets: 2 })]))
    const answers: Answer[] = []
    let next = 0
    const worker = async () => {
      while (next < FLOOD) {
        const source = SOURCES[next++ % SOURCES.length]!
        answers.push(await initialize(source, agents.get(source)!))
      }
    }
    const started = Date.now()
    await Promise.all(Array.from({ length: CONCURRENCY }, worker))
    const seconds = (Date.now() - started) / 1000
    agents.forEach((a) => a.destroy())
    const after = rssMb(berth.proc.pid)
    const count = (status: number) => answers.filter((a) => a.status === status).length
    console.log(`${FLOOD} initialize in ${seconds.toFixed(1)} s: ${count(200)} sessions, ${count(429)} × 429, ${count(503)} × 503; RSS ${before.toFixed(0)} → ${after.toFixed(0)} MB`)

    expect(answers.filter((a) => ![200, 429, 503].includes(a.status)).map((a) => `${a.status} ${a.body}`)).toEqual([])
    // The default cap of sessions opened without a key (mcp.max_anonymous_sessions), one taken above.
    expect(count(200)).toBeLessThanOrEqual(999)
    for (const status of [503, 429]) {
      const refused = answers.filter((a) => a.status === status)
      expect(refused.length, `answers ${status}`).toBeGreaterThan(0)
      for (const a of refused) {
        expect(Number(a.retryAfter), `Retry-After of a ${status}`).toBeGreaterThanOrEqual(1)
        const body = JSON.parse(a.body)
        expect(body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000, data: { code: status === 429 ? 'RATE_LIMITED' : 'UNAVAILABLE' } } })
        expect(body.error.message).toMatch(/retry/i)
      }
    }
    expect(after - before, `RSS grew from ${before.toFixed(0)} to ${after.toFixed(0)} MB`).toBeLessThan(RSS_GROWTH_LIMIT_MB)

    expect((await fetch(`${berth.url}/api/v1/status/`)).status).toBe(200)
    // Sessions opened with a key have a pool of their own: anonymous ones cannot take it.
    const agent = new Client({ name: 'keyed', version: '1' })
    await agent.connect(new StreamableHTTPClientTransport(new URL(`${berth.url}/mcp/`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }))
    const whoami = (await agent.callTool({ name: 'whoami', arguments: {} })) as { isError?: boolean; structuredContent?: { key?: unknown } }
    expect(whoami.isError).toBeFalsy()
    await agent.close()
    // A made-up key is no key: it does not get into the keyed pool.
    const forged = await fetch(`${berth.url}/mcp/`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer svc_${'0'.repeat(48)}` }, body: INITIALIZE })
    expect(forged.status).toBe(503)
  }, 60_000)
})
