import { describe, expect, it } from 'vitest'
import { newServer, newTransport } from './sdk'

/**
 * What one session keeps in memory: the SDK's transport (1.32) kept an entry, with its Request,
 * for every JSON request it answered until the session ended (typescript-sdk issue 2559).
 */
const log = { debug() {}, info() {}, warn() {}, error() {} } as never
const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
const post = (body: unknown, session?: string) => new Request('http://localhost/mcp/', {
  method: 'POST', headers: { ...headers, ...(session ? { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' } : {}) }, body: JSON.stringify(body),
})

describe('a session of the SDK transport', () => {
  it('keeps nothing of the requests it has answered', async () => {
    const transport = newTransport({ onsessioninitialized() {}, onsessionclosed() {} })
    const server = newServer({ name: 'berth', version: 'test', instructions: '', catalog: () => [], call: async () => ({ content: [] }), log })
    await server.connect(transport)
    const init = await transport.handleRequest(post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }))
    const session = init.headers.get('mcp-session-id')!
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => transport.handleRequest(post({ jsonrpc: '2.0', id: i + 1, method: 'tools/list' }, session))))
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200))
    expect((transport as unknown as { _streamMapping: Map<string, unknown> })._streamMapping.size).toBe(0)
    await transport.close()
  })
})
