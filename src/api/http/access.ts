import { Elysia, type DocumentDecoration } from 'elysia'
import type { Scope } from '../../core/enums'
import type { KeysService, Principal } from '../../domain/keys'
import { requireChangeable, type SiteGuard, type SiteNeed } from '../../domain/sites'
import type { SiteRow } from '../../store/schema'
import { forbidden, notFound, op, say, unauthorized } from '../../domain/errors'

/** The OpenAPI extension every operation carries; the route-table test requires it on each route. */
export const ACCESS_EXTENSION = 'x-berth-access'
/** What a site route needs of its site (`owned`, `changeable`); the document turns it into 404/409/503 answers. */
export const SITE_EXTENSION = 'x-berth-site'
/** The scope a key sent to a public route must hold (`optionalScope`). */
export const OPTIONAL_SCOPE_EXTENSION = 'x-berth-optional-scope'
/** A route that needs a checkout session's secret; the document turns it into its two parameters. */
export const CHECKOUT_SECRET_EXTENSION = 'x-berth-checkout-secret'

/**
 * Declares who may call a route. Every route states exactly one of:
 *   `{ public: true }`   no credentials (plans, status, register, checkout, claim, documents);
 *   `{ scope: 'read' }`  a bearer key holding that scope (design.md's scope matrix);
 *   `{ scope: { scope: 'read', siteKeys: true } }` the same, and a site-scoped key may call it too
 *                        though it names no site: the handler shows such a key its own site's only.
 * A site-scoped key (claim flow) passes only on routes with a `:tenant_slug` parameter naming its own
 * site; any other site answers 404 as if it did not exist, and every other route answers 403.
 * A public route that acts on the account of a key sent to it (checkout creation: the site joins
 * that account) also declares `{ optionalScope: 'admin' }`: no key is fine, and a key that is sent
 * must be valid, hold the scope and not be site-scoped; the handler gets it as `caller` (or null).
 *
 * A route on one site (`/sites/:tenant_slug/...`) also declares what it needs of the site,
 * `{ site: 'owned' }` for reads or `{ site: 'changeable' }` for changes, and its handler gets the
 * site (the SiteGuard's answer: 404 for another account's, 409 when it cannot change now).
 * A route on one checkout session declares `{ checkoutSecret: true }`: the secret from the query
 * or the X-Checkout-Secret header must be the session's, else 404 as if it did not exist.
 *
 * The one rule: **who may touch what is settled before the request is validated.** The key, its
 * scope, the site's ownership and the checkout secret are all checked in the transform stage,
 * before the body, query and path parameters are, so a caller without the right credentials
 * learns nothing from a 422 about what exists or what a valid request looks like: 401, 403 or
 * 404 first, whatever the body. What the site's state allows (409) is checked after validation,
 * as the operation's own checks are, so that only a valid request of the owner learns it.
 */
export function access(keys: KeysService, guard: SiteGuard, checkouts: CheckoutProof) {
  const principals = new WeakMap<Request, Principal>()
  const sites = new WeakMap<Request, SiteRow>()
  /** The caller of a keyed route, authenticated once per request by whichever check runs first. */
  const principalOf = (request: Request): Principal => {
    let principal = principals.get(request)
    if (!principal) {
      principal = authenticate(keys, request.headers.get('authorization'))
      principals.set(request, principal)
    }
    return principal
  }
  return new Elysia({ name: 'access' }).macro({
    public: (enabled: true) => ({
      detail: { [ACCESS_EXTENSION]: enabled ? 'public' : 'unset', security: [] } as DocumentDecoration,
    }),
    scope: (declared: Scope | SiteKeysScope) => {
      const { scope, siteKeys } = typeof declared === 'string' ? { scope: declared, siteKeys: false } : declared
      return {
        detail: { [ACCESS_EXTENSION]: scope, security: [{ bearer: [] }] } as DocumentDecoration,
        transform({ request, params }: { request: Request; params: unknown }) {
          const principal = principalOf(request)
          // A site-scoped key off its site's routes: say that, not which scope it lacks.
          const slugParam = (params as Record<string, string | undefined> | undefined)?.tenant_slug
          if (principal.siteSlug !== null && slugParam === undefined && !siteKeys) throw siteKeyOutside(principal.siteSlug)
          requireScope(principal, scope)
          if (principal.siteSlug !== null && slugParam !== undefined) {
            const slug = slugParam
            if (slug !== principal.siteSlug) throw notFound(say`No site '${slug}' in your account; this key works only on its own site, '${principal.siteSlug}' (${op('getSite', { tenant_slug: principal.siteSlug })}).`, 'tenant_slug')
          }
        },
        resolve({ request }: { request: Request }): { principal: Principal } {
          return { principal: principals.get(request)! }
        },
      }
    },
    optionalScope: (scope: Scope) => ({
      detail: { [OPTIONAL_SCOPE_EXTENSION]: scope } as DocumentDecoration,
      transform({ request }) {
        const header = request.headers.get('authorization')
        if (!header) return
        const principal = principalOf(request)
        requireScope(principal, scope)
        if (principal.siteSlug !== null) throw siteKeyOutside(principal.siteSlug)
      },
      resolve({ request }): { caller: Principal | null } {
        return { caller: principals.get(request) ?? null }
      },
    }),
    site: (need: SiteNeed) => ({
      detail: { [SITE_EXTENSION]: need } as DocumentDecoration,
      // Ownership before validation: another account's site is 404 whatever the body or query.
      transform({ request, params }) {
        const slug = (params as Record<string, string | null>).tenant_slug
        // Not even a string (broken percent-encoding): validation answers what is wrong with it.
        if (typeof slug !== 'string') return
        sites.set(request, guard.require(principalOf(request), slug, 'owned'))
      },
      // Its state after validation, as the operation's own checks: 409 for a valid request only.
      resolve({ request }): { site: SiteRow } {
        const site = sites.get(request)!
        return { site: need === 'changeable' ? requireChangeable(site) : site }
      },
    }),
    checkoutSecret: (enabled: true) => ({
      detail: { [CHECKOUT_SECRET_EXTENSION]: enabled } as DocumentDecoration,
      // The session's secret before validation: a stranger learns nothing from a 422.
      transform({ request, params }) {
        if (enabled) checkouts.prove((params as Record<string, string>).checkout_id!, checkoutSecretOf(request))
      },
    }),
  })
}

/**
 * A route without a `:tenant_slug` that a site-scoped key may call too (GET /events/): the
 * handler limits what such a key sees to its own site (`principal.siteId`).
 */
export interface SiteKeysScope {
  scope: Scope
  siteKeys: true
}

/** What the access plugin needs of checkouts: the proof that the caller holds a session's secret. */
export interface CheckoutProof {
  /** Throws not_found unless `secret` is the session's. */
  prove(id: string, secret: string | undefined): void
}

/** The checkout secret of a request: `?checkout_secret=` or the X-Checkout-Secret header (spec part 5.6). */
export function checkoutSecretOf(request: Request): string | undefined {
  const mark = request.url.indexOf('?')
  const fromQuery = mark < 0 ? null : new URLSearchParams(request.url.slice(mark + 1)).get('checkout_secret')
  return fromQuery ?? request.headers.get('x-checkout-secret') ?? undefined
}

/** The principal of an `Authorization: Bearer <key>` header (RFC 6750 section 2.1), else 401. */
function authenticate(keys: KeysService, header: string | null): Principal {
  if (!header) throw unauthorized(say`Send your API key as "Authorization: Bearer ${keys.prefix}_..."; ${op('register')} gives you one.`)
  const space = header.indexOf(' ')
  const key = space > 0 && header.slice(0, space).toLowerCase() === 'bearer' ? header.slice(space + 1).trim() : ''
  return keys.authenticate(key)
}

function requireScope(principal: Principal, scope: Scope): void {
  if (!principal.scopes.includes(scope)) {
    throw forbidden(say`This key lacks the '${scope}' scope; use a key that has it (${op('listKeys')} lists yours).`)
  }
}

const siteKeyOutside = (slug: string) => forbidden(say`This key works only on its own site, '${slug}' (${op('getSite', { tenant_slug: slug })}); use an account key here.`)
