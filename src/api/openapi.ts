import { filterPaths, registerSchemaPath } from '@elysiajs/swagger/utils'
import type { AnyElysia } from 'elysia'
import { ACCESS_EXTENSION } from './http/access'
import { ErrorEnvelope } from './http/schemas'

const API_PREFIX = '/api/v1'

/**
 * Builds the OpenAPI 3 document from the live route table, with the same TypeBox schemas Elysia
 * validates requests and responses with: nothing is written twice. Paths are relative to
 * base_url (the server entry), every operation documents the error envelope as its `default`
 * response, and keyed operations name the bearer scheme.
 */
export function buildOpenApi(app: AnyElysia, info: { baseUrl: string; version: string; testMode: boolean }) {
  const paths: Record<string, Record<string, Record<string, unknown>>> = {}
  for (const route of app.routes) {
    const hooks = route.hooks as { detail?: { hide?: boolean } }
    if (hooks.detail?.hide || !route.path.startsWith(`${API_PREFIX}/`)) continue
    registerSchemaPath({
      schema: paths,
      // A string parser entry is how the plugin learns the one content type we accept.
      hook: { ...(route.hooks as object), parse: ['application/json'] } as never,
      method: route.method as never,
      path: route.path.slice(API_PREFIX.length),
      models: {},
      contentType: 'application/json',
    })
  }
  const filtered = filterPaths(paths, { excludeStaticFile: false, exclude: [] }) as typeof paths
  for (const operations of Object.values(filtered)) {
    for (const op of Object.values(operations)) {
      const responses = op.responses as Record<string, unknown>
      responses.default = {
        description: 'Error: the envelope with ok false; see error.code and error.param.',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      }
      for (const [status, response] of Object.entries(responses)) {
        if (status !== 'default') (response as Record<string, unknown>).description ??= status.startsWith('2') ? 'Success' : 'Error'
      }
      // A body whose fields are all optional (or that has none: NoBody) may be left out.
      const body = op.requestBody as { required?: boolean; content?: Record<string, { schema?: { required?: string[] } }> } | undefined
      if (body && !body.content?.['application/json']?.schema?.required?.length) body.required = false
      if (op.security === undefined) op.security = []
      if (op[ACCESS_EXTENSION] === undefined) op[ACCESS_EXTENSION] = 'unset'
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Berth hosting API',
      version: '1.0',
      description: `Self-service web hosting for agents: plans, checkout, sites, files, DNS, domains, keys.${info.testMode ? ' This server is in test mode: payments use the built-in test processor.' : ''}`,
      'x-berth-version': info.version,
    },
    servers: [{ url: info.baseUrl }],
    tags: [
      { name: 'Discovery' }, { name: 'Plans' }, { name: 'Identity' }, { name: 'Keys' }, { name: 'Checkout' }, { name: 'Sites' },
    ],
    paths: filtered,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key: {prefix}_ followed by 48 hex characters.' } },
      schemas: { Error: ErrorEnvelope },
    },
  }
}
