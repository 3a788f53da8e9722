import { Elysia } from 'elysia'
import { ValidationError } from './errors'

/**
 * Refuses query parameters on routes that declare none, as bodies refuse unknown fields: a
 * `DELETE /sites/{slug}/delete/?dry_run=true` must be a 422, not a deletion. `routes` lists
 * `METHOD path` (as registered) of the routes without a query schema; it is read per request,
 * so it can be filled once the route table is complete.
 */
export function strictQuery(routesWithoutQuery: () => ReadonlySet<string>) {
  return new Elysia({ name: 'strict-query' }).onBeforeHandle({ as: 'global' }, ({ request, route }) => {
    const mark = request.url.indexOf('?')
    if (mark < 0 || mark === request.url.length - 1) return
    if (!routesWithoutQuery().has(`${request.method} ${route}`)) return
    const first = new URLSearchParams(request.url.slice(mark + 1)).keys().next().value
    if (first === undefined) return
    throw new ValidationError(first, `This route takes no query parameters; remove '${first}' (see /api/v1/openapi.json for what it accepts).`)
  })
}
