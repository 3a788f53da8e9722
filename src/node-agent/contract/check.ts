import type { TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { AGENT_ROUTES, type AgentRoute, type AgentRouteName } from './routes'

/**
 * The contract's checks, the same on both sides: the agent's router refuses what they refuse
 * (400), and the control plane's client refuses to send it. Each schema is compiled once.
 */

/** What is wrong with a request: the field (`slug`, `policy.pool`, `body`) and a sentence. */
export interface RequestProblem {
  param: string
  message: string
}

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>()

function checkerOf(schema: TSchema): TypeCheck<TSchema> {
  let check = compiled.get(schema)
  if (!check) {
    check = TypeCompiler.Compile(schema)
    compiled.set(schema, check)
  }
  return check
}

/** The first problem of `value` against `schema`, named under `part` (params, query, headers, body); null when it passes. */
export function problemOf(schema: TSchema, value: unknown, part: 'params' | 'query' | 'headers' | 'body'): RequestProblem | null {
  const check = checkerOf(schema)
  if (check.Check(value)) return null
  const first = check.Errors(value).First()
  const path = first?.path.replace(/^\//, '').replaceAll('/', '.') ?? ''
  const param = path || part
  const description = (first?.schema as { description?: string } | undefined)?.description
  const what = description ? `must be ${description}` : (first?.message ?? 'is not what the route takes').replace(/^Expected/, 'expected')
  return { param, message: `${part === 'body' ? '' : `${part} `}${param}: ${what}` }
}

/** The route's path with its parameters put in (each encoded as one segment). */
export function pathOf(route: Pick<AgentRoute, 'path'>, params: Record<string, string> = {}): string {
  return route.path.split('/').map((segment) => (segment.startsWith(':') ? encodeURIComponent(params[segment.slice(1)] ?? '') : segment)).join('/')
}

/** A route of the table matched by a request's path. */
export interface Matched {
  name: AgentRouteName
  params: Record<string, string>
}

const TABLE = Object.entries(AGENT_ROUTES).map(([name, route]) => ({ name: name as AgentRouteName, method: route.method as string, segments: route.path.split('/') }))

/**
 * The route of `method` and `pathname`: `{ match }`, or `{ allowed }` (the path's methods, for a
 * 405) when the path is a route's with another method, or null when no route has the path. A
 * parameter is one segment, percent-decoded; one that does not decode is null (no such path).
 */
export function matchRoute(method: string, pathname: string): { match: Matched } | { allowed: string[] } | null {
  const segments = pathname.split('/')
  const allowed: string[] = []
  for (const route of TABLE) {
    const params = paramsOf(route.segments, segments)
    if (!params) continue
    if (route.method === method) return { match: { name: route.name, params } }
    allowed.push(route.method)
  }
  return allowed.length > 0 ? { allowed } : null
}

function paramsOf(pattern: string[], segments: string[]): Record<string, string> | null {
  if (pattern.length !== segments.length) return null
  const params: Record<string, string> = {}
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i].startsWith(':')) {
      if (segments[i] === '') return null
      try {
        params[pattern[i].slice(1)] = decodeURIComponent(segments[i])
      } catch {
        return null
      }
    } else if (pattern[i] !== segments[i]) {
      return null
    }
  }
  return params
}
