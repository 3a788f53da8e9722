import { Elysia, type DocumentDecoration } from 'elysia'
import type { Scope } from '../keys/model'
import type { KeysService, Principal } from '../../domain/keys/service'
import type { SiteGuard, SiteNeed } from '../../domain/sites/guard'
import type { SiteRow } from '../../store/schema'
import { ForbiddenError, NotFoundError, UnauthorizedError } from './errors'

/** The OpenAPI extension every operation carries; the route-table test requires it on each route. */
export const ACCESS_EXTENSION = 'x-berth-access'
/** What a site route needs of its site (`owned`, `changeable`); the document turns it into 404/409/503 answers. */
export const SITE_EXTENSION = 'x-berth-site'
/** The scope a key sent to a public route must hold (`optionalScope`). */
export const OPTIONAL_SCOPE_EXTENSION = 'x-berth-optional-scope'

/**
 * Declares who may call a route. Every route states exactly one of:
 *   `{ public: true }`   no credentials (plans, status, register, checkout, claim, documents);
 *   `{ scope: 'read' }`  a bearer key holding that scope (design.md's scope matrix).
 * A site-scoped key (claim flow) passes only on routes with a `:tenant_slug` parameter naming its own
 * site; any other site answers 404 as if it did not exist, and every other route answers 403.
 * A public route that acts on the account of a key sent to it (checkout creation: the site joins
 * that account) also declares `{ optionalScope: 'admin' }`: no key is fine, and a key that is sent
 * must be valid, hold the scope and not be site-scoped; the handler gets it as `caller` (or null).
 *
 * The check runs in the transform stage, before the body and query are validated: a caller
 * without a valid key learns nothing about what a valid request would look like (401 first).
 *
 * A route on one site (`/sites/:tenant_slug/...`) also declares what it needs of the site,
 * `{ site: 'owned' }` for reads or `{ site: 'changeable' }` for changes, and its handler gets the
 * site (the SiteGuard's answer: 404 for another account's, 409 when it cannot change now). That
 * check runs after validation, as the operation's own checks always have.
 */
export function access(keys: KeysService, guard: SiteGuard) {
  const principals = new WeakMap<Request, Principal>()
  return new Elysia({ name: 'access' }).macro({
    public: (enabled: true) => ({
      detail: { [ACCESS_EXTENSION]: enabled ? 'public' : 'unset', security: [] } as DocumentDecoration,
    }),
    scope: (scope: Scope) => ({
      detail: { [ACCESS_EXTENSION]: scope, security: [{ bearer: [] }] } as DocumentDecoration,
      transform({ request, params }) {
        const principal = authenticate(keys, request.headers.get('authorization'))
        requireScope(principal, scope)
        if (principal.siteSlug !== null) {
          const slug = (params as Record<string, string | undefined> | undefined)?.tenant_slug
          if (slug === undefined) throw siteKeyOutside(principal.siteSlug)
          if (slug !== principal.siteSlug) throw new NotFoundError(`No site '${slug}' in your account; this key works only on /sites/${principal.siteSlug}/.`, 'tenant_slug')
        }
        principals.set(request, principal)
      },
      resolve({ request }): { principal: Principal } {
        return { principal: principals.get(request)! }
      },
    }),
    optionalScope: (scope: Scope) => ({
      detail: { [OPTIONAL_SCOPE_EXTENSION]: scope } as DocumentDecoration,
      transform({ request }) {
        const header = request.headers.get('authorization')
        if (!header) return
        const principal = authenticate(keys, header)
        requireScope(principal, scope)
        if (principal.siteSlug !== null) throw siteKeyOutside(principal.siteSlug)
        principals.set(request, principal)
      },
      resolve({ request }): { caller: Principal | null } {
        return { caller: principals.get(request) ?? null }
      },
    }),
    site: (need: SiteNeed) => ({
      detail: { [SITE_EXTENSION]: need } as DocumentDecoration,
      resolve({ request, params }): { site: SiteRow } {
        const slug = (params as Record<string, string>).tenant_slug!
        return { site: guard.require(principals.get(request)!, slug, need) }
      },
    }),
  })
}

/** The principal of an `Authorization: Bearer <key>` header (RFC 6750 section 2.1), else 401. */
function authenticate(keys: KeysService, header: string | null): Principal {
  if (!header) throw new UnauthorizedError(`Send your API key as "Authorization: Bearer ${keys.prefix}_..."; POST /auth/register/ gives you one.`)
  const space = header.indexOf(' ')
  const key = space > 0 && header.slice(0, space).toLowerCase() === 'bearer' ? header.slice(space + 1).trim() : ''
  return keys.authenticate(key)
}

function requireScope(principal: Principal, scope: Scope): void {
  if (!principal.scopes.includes(scope)) {
    throw new ForbiddenError(`This key lacks the '${scope}' scope; use a key that has it (GET /keys/ lists yours).`)
  }
}

const siteKeyOutside = (slug: string) => new ForbiddenError(`This key works only on /sites/${slug}/...; use an account key here.`)
