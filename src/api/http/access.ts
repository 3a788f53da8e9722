import { Elysia } from 'elysia'
import type { Scope } from '../keys/model'
import type { KeysService, Principal } from '../keys/service'
import { ForbiddenError, NotFoundError } from './errors'

/** The OpenAPI extension every operation carries; the route-table test requires it on each route. */
export const ACCESS_EXTENSION = 'x-berth-access'

/**
 * Declares who may call a route. Every route states exactly one of:
 *   `{ public: true }`   no credentials (plans, status, register, checkout, claim, documents);
 *   `{ scope: 'read' }`  a bearer key holding that scope (design.md's scope matrix).
 * A site-scoped key (claim flow) passes only on routes with a `:slug` parameter naming its own
 * site; any other site answers 404 as if it did not exist, and every other route answers 403.
 */
export function access(keys: KeysService) {
  return new Elysia({ name: 'access' }).macro({
    public: (enabled: true) => ({
      detail: { [ACCESS_EXTENSION]: enabled ? 'public' : 'unset', security: [] },
    }),
    scope: (scope: Scope) => ({
      detail: { [ACCESS_EXTENSION]: scope, security: [{ bearer: [] }] },
      resolve({ request, params }): { principal: Principal } {
        const principal = keys.authenticate(request.headers.get('authorization'))
        if (!principal.scopes.includes(scope)) {
          throw new ForbiddenError(`This key lacks the '${scope}' scope; use a key that has it (GET /keys/ lists yours).`)
        }
        if (principal.siteSlug !== null) {
          const slug = (params as Record<string, string | undefined>).slug
          if (slug === undefined) throw new ForbiddenError(`This key works only on /sites/${principal.siteSlug}/...; use an account key here.`)
          if (slug !== principal.siteSlug) throw new NotFoundError(`No site '${slug}' in your account.`, 'slug')
        }
        return { principal }
      },
    }),
  })
}
