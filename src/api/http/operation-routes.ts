import type { OperationRef } from '../../domain/errors'

/** The API's prefix; messages name routes relative to it, as docs/api.md does (`GET /sites/`). */
const API_PREFIX = '/api/v1'

/**
 * Operations a message may name before their route exists in this build (a later area's), with
 * the route the spec gives them. A route with the operation id takes over once it exists.
 */
const SPEC_ROUTES: Record<string, string> = {
  listSubscriptions: 'GET /account/subscriptions/',
}

/**
 * How the REST door names an operation in a message: its method and path, with the parameters
 * the message knows filled in and the others left as `{name}`, e.g. `op('restoreSite',
 * { tenant_slug: 'acme' })` as `POST /sites/acme/restore/`. Built from the app's own route table
 * (each route's `detail.operationId`), so a message can never name a route that is not there.
 */
export function operationRenderer(routes: readonly { method: string; path: string; hooks: unknown }[]): (ref: OperationRef) => string {
  const byOperation = new Map<string, string>()
  for (const r of routes) {
    const id = (r.hooks as { detail?: { operationId?: string } }).detail?.operationId
    if (id && r.path.startsWith(`${API_PREFIX}/`) && r.path.endsWith('/') && !byOperation.has(id)) byOperation.set(id, `${r.method} ${r.path.slice(API_PREFIX.length)}`)
  }
  return (ref) => {
    // An unknown operation is named by its id rather than failing the answer it is part of;
    // operation-routes.test.ts checks that every operation the domain names has a route.
    const route = byOperation.get(ref.operation) ?? SPEC_ROUTES[ref.operation]
    if (!route) return ref.operation
    return route.replace(/(?:\{(\w+)\}|:(\w+))/g, (_, braced: string | undefined, colon: string | undefined) => {
      const name = (braced ?? colon)!
      return ref.params[name] ?? `{${name}}`
    })
  }
}
