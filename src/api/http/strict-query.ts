import { Elysia } from 'elysia'
import { descriptionFor } from './doors'
import { ValidationError } from './errors'

/** What a route accepts in its query string, beyond what its schema checks. */
export interface QueryRule {
  /** The route declares no query parameters at all. */
  none: boolean
  /** Integer parameters: digits only, as written (Number() would also take 0x10, 1e1, +5). */
  integers: ReadonlySet<string>
}

/**
 * Holds query strings to the strictness of bodies: on routes that declare no query parameters,
 * any is refused (a `DELETE /sites/{slug}/delete/?dry_run=true` must be a 422, not a deletion);
 * integer parameters must be plain digits. `rules` maps `METHOD path` (as registered) and is
 * read per request, so it can be filled once the route table is complete.
 */
export function strictQuery(rules: () => ReadonlyMap<string, QueryRule>) {
  return new Elysia({ name: 'strict-query' }).onBeforeHandle({ as: 'global' }, ({ request, route }) => {
    const mark = request.url.indexOf('?')
    if (mark < 0 || mark === request.url.length - 1) return
    const rule = rules().get(`${request.method} ${route}`)
    if (!rule) return
    const params = new URLSearchParams(request.url.slice(mark + 1))
    if (rule.none) {
      const first = params.keys().next().value
      if (first !== undefined) throw new ValidationError(first, `This route takes no query parameters; remove '${first}' (see ${descriptionFor(request)} for what it accepts).`)
      return
    }
    for (const name of rule.integers) {
      const value = params.get(name)
      if (value !== null && !/^\d+$/.test(value)) throw new ValidationError(name, `Query parameter '${name}' must be a whole number written in digits, such as ${name}=10 (got "${value.slice(0, 40)}").`)
    }
  })
}
