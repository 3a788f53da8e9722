import { ScalarRender } from '@elysiajs/swagger/scalar'
import { Elysia, type AnyElysia } from 'elysia'
import type { Services } from '../compose'
import { authRoutes } from './auth/routes'
import { jsonBody } from './http/body'
import { envelope, type MethodLookup } from './http/envelope'
import { methodLookup } from './http/method-lookup'
import { keyRoutes } from './keys/routes'
import { buildOpenApi } from './openapi'
import { planRoutes } from './plans/routes'
import { apiPlugins } from './plugins'
import { statusRoutes } from './status/routes'
import { checkoutRoutes } from './checkout/routes'
import { payRoutes } from './pay/routes'
import { siteRoutes } from './sites/routes'

/**
 * The HTTP application: the envelope and body parser around every route, and each feature's
 * routes under /api/v1. Built from services, never from config or globals, so tests can call
 * `createApp(services).handle(request)` with their own graph.
 */
export function createApp(s: Services) {
  let lookup: MethodLookup = () => []
  const plugins = apiPlugins({ keys: s.keys, limiter: s.limiter, clients: s.clients })
  const api = new Elysia({ prefix: '/api/v1', normalize: false })
    .use(statusRoutes(plugins, s.status))
    .use(planRoutes(plugins, s.plans))
    .use(authRoutes(plugins, s.auth))
    .use(keyRoutes(plugins, s.keys))
    .use(checkoutRoutes(plugins, s.checkout, s.keys))
    .use(siteRoutes(plugins, s.sites))

  let openapi: ReturnType<typeof buildOpenApi> | undefined
  const app: AnyElysia = new Elysia({ name: 'berth', normalize: false })
    .use(envelope({ log: s.log, methodsFor: (path) => lookup(path) }))
    .use(jsonBody(s.config.server.maxBodyBytes))
    .use(plugins)
    .use(api)
    .use(payRoutes(plugins, s.processor))
    .get('/api/v1/openapi.json', () => Response.json((openapi ??= buildOpenApi(app, { baseUrl: s.config.server.baseUrl, version: s.status.version, testMode: s.status.testMode }))), {
      public: true,
      detail: { hide: true },
    })
    .get('/api/v1/docs/', () => new Response(
      ScalarRender({ title: 'Berth hosting API', version: '1.0', description: 'API reference' }, '1.0', { spec: { url: '/api/v1/openapi.json' } } as never, 'https://cdn.jsdelivr.net/npm/@scalar/api-reference'),
      { headers: { 'content-type': 'text/html; charset=utf-8' } },
    ), { public: true, detail: { hide: true } })
  lookup = methodLookup(app.routes)
  return app
}

export type App = ReturnType<typeof createApp>
