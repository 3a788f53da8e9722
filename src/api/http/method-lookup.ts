import type { MethodLookup } from './envelope'

/**
 * Builds the lookup behind 405 responses from the route table: which methods a concrete path
 * answers to, with or without its trailing slash.
 */
export function methodLookup(routes: { method: string; path: string }[]): MethodLookup {
  const patterns = routes
    .filter((r) => r.method !== 'ALL')
    .map((r) => ({
      method: r.method,
      regex: new RegExp(`^${r.path.replace(/\/+$/, '').split('/').map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '*' ? '.*' : escape(seg))).join('/')}/?$`),
    }))
  return (path) => [...new Set(patterns.filter((p) => p.regex.test(path)).map((p) => p.method))]
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
