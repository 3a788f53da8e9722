import type { InProcess } from '../../../test/helpers/in-process'
import { viaMcp } from '../http/doors'
import { createMcpHandler, type McpDeps, type McpHandler } from './server'

/**
 * The tests' MCP door (messages.test.ts, events.test.ts): the handler over the in-process API `h`
 * and its OpenAPI document, every `initialize` admitted and no key looked up by the door itself,
 * ten sessions of each kind. `deps` adds or replaces what a test needs (the event log's door,
 * the ports and URL of a real listener). A fixture for tests, imported by no product code.
 */
export async function mcpOverInProcess(h: InProcess, deps: Partial<McpDeps> = {}): Promise<McpHandler> {
  const doc = (await h.call('GET', '/api/v1/openapi.json')).json
  return createMcpHandler({
    dispatch: (request) => h.app.handle(request),
    openapi: () => doc,
    tag: (request, outer) => {
      h.services.clients.outer.set(request, outer)
      viaMcp.add(request)
    },
    keyOf: () => null,
    admit: () => ({ allowed: true, limit: 1, remaining: 1, resetSeconds: 1, windowSeconds: 1 }),
    limits: { maxKeyed: 10, maxAnonymous: 10, perKey: 10, keyedIdleMs: 60_000, anonymousIdleMs: 60_000 },
    localPorts: () => ({ http: 80, https: null }),
    version: 'test',
    siteUrl: 'http://localhost',
    log: h.log,
    ...deps,
  })
}
