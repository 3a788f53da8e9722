import type { MethodLookup } from './envelope'

/**
 * Builds the lookup behind 405 responses from the route table: which methods a concrete path
 * answers to, with or without its trailing slash.
 *
 * The router takes a literal segment before a parameter, so a path that a route names in full
 * (`/sites/create/`, POST) is that route's, and a method it lacks is not allowed there even when
 * a route with a parameter matches the same path (`GET /sites/{tenant_slug}/` would take
 * `create` as a site's name): Allow names the methods of the most literal routes that match
 * (issue 36).
 */
export function methodLookup(routes: { method: string; path: string }[]): MethodLookup {
  const patterns = routes
    .filter((r) => r.method !== 'ALL')
    .map((r) => {
      const segments = r.path.replace(/\/+$/, '').split('/')
      return {
        method: r.method,
        literals: segments.filter((seg) => !seg.startsWith(':') && seg !== '*').length,
        regex: new RegExp(`^${segments.map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '*' ? '.*' : escape(seg))).join('/')}/?$`),
      }
    })
  return (path) => {
    const matching = patterns.filter((p) => p.regex.test(path))
    const most = Math.max(...matching.map((p) => p.literals))
    return [...new Set(matching.filter((p) => p.literals === most).map((p) => p.method))]
  }
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
