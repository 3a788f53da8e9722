import { Elysia, type DocumentDecoration } from 'elysia'
import type { Scope } from '../keys/model'
import type { KeysService, Principal } from '../keys/service'
import { ForbiddenError, NotFoundError } from './errors'

/** The OpenAPI extension every operation carries; the route-table test requires it on each route. */
export const ACCESS_EXTENSION = 'x-berth-access'

/**
 * Declares who may call a route. Every route states exactly one of:
 *   `{ public: true }`   no credentials (plans, status, register, checkout, claim, documents);
 *   `{ scope: 'read' }`  a bearer key holding that scope (design.md's scope matrix).
 * A site-scoped key (claim flow) passes only on routes with a `:tenant_slug` parameter naming its own
 * site; any other site answers 404 as if it did not exist, and every other route answers 403.
 *
 * The check runs in the transform stage, before the body and query are validated: a caller
 * without a valid key learns nothing about what a valid request would look like (401 first).
 */
export function access(keys: KeysService) {
  const principals = new WeakMap<Request, Principal>()
  return new Elysia({ name: 'access' }).macro({
    public: (enabled: true) => ({
      detail: { [ACCESS_EXTENSION]: enabled ? 'public' : 'unset', security: [] } as DocumentDecoration,
    }),
    scope: (scope: Scope) => ({
      detail: { [ACCESS_EXTENSION]: scope, security: [{ bearer: [] }] } as DocumentDecoration,
      transform({ request, params }) {
        const principal = keys.authenticate(request.headers.get('authorization'))
        if (!principal.scopes.includes(scope)) {
          throw new ForbiddenError(`This key lacks the '${scope}' scope; use a key that has it (GET /keys/ lists yours).`)
        }
        if (principal.siteSlug !== null) {
          const slug = (params as Record<string, string | undefined> | undefined)?.tenant_slug
          if (slug === undefined) throw new ForbiddenError(`This key works only on /sites/${principal.siteSlug}/...; use an account key here.`)
          if (slug !== principal.siteSlug) throw new NotFoundError(`No site '${slug}' in your account.`, 'tenant_slug')
        }
        principals.set(request, principal)
      },
      resolve({ request }): { principal: Principal } {
        return { principal: principals.get(request)! }
      },
    }),
  })
}
