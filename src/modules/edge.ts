import type { SiteModuleFlags, SiteTarget } from '../edge/types'
import { addToPage, isPage } from './page-response'
import type { PageAdditions } from './seo/rewrite'

/** Sends a request on to the site's container (the edge's own forwarding, metrics included). */
export type Forward = (request: Request) => Promise<Response>

/** One request to a site with a module on, as the modules' edge hooks see it. */
export interface ModuleRequest {
  request: Request
  site: SiteTarget
  /** The request's path, without its query string. */
  path: string
  /** The scheme and host the visitor asked for (`https://shop.example`). */
  origin: string
  /** The visitor's address (for the modules' per-visitor limits). */
  visitor: string
  forward: Forward
}

/**
 * What one module (src/modules/<name>/edge.ts) does to a site's traffic while it is on for the
 * site. Both parts are optional; neither may throw for a visitor's bad input (an answer carries
 * the API's error envelope instead).
 */
export interface ModuleEdgeHook {
  /** The flag that turns the hook on for a site. */
  module: keyof SiteModuleFlags
  /**
   * The module's own answer to the request, before it reaches the container: a Response (or a
   * promise of one), or undefined when the request is not the module's. A promise may still
   * settle to undefined (the site's own file wins): the request then goes on.
   */
  answer?(r: ModuleRequest): Response | Promise<Response | undefined> | undefined
  /** What the module adds to the site's HTML pages (GET answers of 200 HTML). */
  addToPages?(r: ModuleRequest): Partial<PageAdditions>
  /** The site's files changed: what the hook derives from them is made again. */
  changed?(siteId: string): void
}

const NO_ADDITIONS: PageAdditions = { seo: null, widget: null }

/**
 * What the AI modules do to a site's traffic at the edge (design.md, AI modules): the modules'
 * hooks, asked in the order given (the composition root's: chatbot, translation, seo), each only
 * while its module is on for the site. Only sites with a module on come here; the others keep
 * the edge's plain path. A request no hook answers goes to the container, and an HTML page it
 * answers gets what the hooks on add to pages, in one rewrite (page-response.ts).
 */
export class SiteModulesEdge {
  private answering: ModuleEdgeHook[]
  private adding: ModuleEdgeHook[]

  constructor(private hooks: ModuleEdgeHook[]) {
    this.answering = hooks.filter((h) => h.answer)
    this.adding = hooks.filter((h) => h.addToPages)
  }

  /** The site's files changed: what the modules derive from them (its sitemap) is made again on the next request. */
  changed(siteId: string): void {
    for (const hook of this.hooks) hook.changed?.(siteId)
  }

  async handle(request: Request, site: SiteTarget, modules: SiteModuleFlags, visitor: string, forward: Forward): Promise<Response> {
    // String work rather than new URL(): this runs on every request of a site with a module on.
    const raw = request.url
    const scheme = raw.indexOf('://')
    const slash = raw.indexOf('/', scheme + 3)
    const query = slash === -1 ? -1 : raw.indexOf('?', slash)
    const path = slash === -1 ? '/' : query === -1 ? raw.slice(slash) : raw.slice(slash, query)
    const origin = `${raw.slice(0, scheme)}://${request.headers.get('host') ?? raw.slice(scheme + 3, slash === -1 ? undefined : slash)}`
    const r: ModuleRequest = { request, site, path, origin, visitor, forward }
    for (const hook of this.answering) {
      if (!modules[hook.module]) continue
      const answer = hook.answer!(r)
      if (answer === undefined) continue
      const response = answer instanceof Response ? answer : await answer
      if (response) return response
    }
    const response = await forward(request)
    if (request.method !== 'GET') return response
    const on = this.adding.filter((h) => modules[h.module])
    if (on.length === 0 || !isPage(response)) return response
    const add = on.reduce<PageAdditions>((all, hook) => ({ ...all, ...hook.addToPages!(r) }), NO_ADDITIONS)
    return addToPage(response, add, site.siteId)
  }
}
