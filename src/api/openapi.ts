import { filterPaths, registerSchemaPath } from '@elysiajs/swagger/utils'
import type { AnyElysia } from 'elysia'
import { ACCESS_EXTENSION, CHECKOUT_SECRET_EXTENSION, OPTIONAL_SCOPE_EXTENSION, SITE_EXTENSION } from './http/access'
import { ERROR_STATUSES, ERRORS_EXTENSION, type ErrorStatus } from './http/error-docs'
import { endOfValue } from './http/pattern-text'
import { ErrorEnvelope, PUBLISHED_TEXT_PATTERN, QUERY_PARAM, TEXT_LENGTH, TEXT_PATTERN, textLengthOf } from './http/schemas'
import { exampleOf } from './openapi-examples'
import { LINKS } from './openapi-links'

const API_PREFIX = '/api/v1'

/**
 * Builds the OpenAPI 3 document from the live route table, with the same TypeBox schemas Elysia
 * validates requests and responses with: nothing is written twice. Paths are relative to
 * base_url (the server entry), every operation documents the error envelope as its `default`
 * response, and keyed operations name the bearer scheme.
 */
export function buildOpenApi(app: AnyElysia, info: { baseUrl: string; version: string; testMode: boolean }) {
  const paths: Record<string, Record<string, Record<string, unknown>>> = {}
  for (const route of app.routes) {
    const hooks = route.hooks as { detail?: { hide?: boolean } }
    if (hooks.detail?.hide || !route.path.startsWith(`${API_PREFIX}/`)) continue
    registerSchemaPath({
      schema: paths,
      // A string parser entry is how the plugin learns the one content type we accept.
      hook: { ...(route.hooks as object), parse: ['application/json'] } as never,
      method: route.method as never,
      path: route.path.slice(API_PREFIX.length),
      models: {},
      contentType: 'application/json',
    })
  }
  // A copy: the route table's schema objects are the ones Elysia validates with, messages included.
  const filtered = JSON.parse(JSON.stringify(filterPaths(paths, { excludeStaticFile: false, exclude: [] }))) as typeof paths
  stripCustomMessages(filtered)
  publishPatterns(filtered)
  for (const [path, operations] of Object.entries(filtered)) {
    for (const [method, op] of Object.entries(operations)) {
      const responses = op.responses as Record<string, Record<string, any>>
      for (const [status, response] of Object.entries(responses)) {
        response.description ??= 'Success'
        const media = response.content?.['application/json']
        if (media?.schema) media.example = exampleOf(media.schema)
        if (status.startsWith('2') && LINKS[op.operationId as string]) response.links = LINKS[op.operationId as string]
        if (!status.startsWith('2')) throw new Error(`${method.toUpperCase()} ${path}: declare error answers with errors: [${status}], not as a response schema`)
      }
      for (const status of errorStatusesOf(method, op)) responses[status] = { $ref: `#/components/responses/${ERROR_STATUSES[status].name}` }
      delete op[ERRORS_EXTENSION]
      // A body whose fields are all optional (or that has none: NoBody) may be left out, unless
      // it needs at least one of them (minProperties).
      const body = op.requestBody as { required?: boolean; content?: Record<string, { schema?: { required?: string[]; allOf?: { minProperties?: number }[] }; example?: unknown }> } | undefined
      const bodyMedia = body?.content?.['application/json']
      if (body && !bodyMedia?.schema?.required?.length && !bodyMedia?.schema?.allOf?.some((rule) => rule.minProperties)) body.required = false
      if (bodyMedia?.schema) bodyMedia.example = exampleOf(bodyMedia.schema)
      for (const param of (op.parameters ?? []) as { name: string; schema?: Record<string, unknown>; example?: unknown; examples?: unknown }[]) {
        if (param.schema?.[QUERY_PARAM] !== undefined) param.schema = plainQueryInteger(param.schema)
        // The plugin lifts a parameter schema's `examples` array onto the parameter, where
        // OpenAPI expects a map of Example Objects: keep the first as the parameter's example.
        if (Array.isArray(param.examples)) {
          param.example = param.examples[0]
          delete param.examples
        }
        param.example ??= exampleOf(param.schema, param.name)
      }
      if (op[CHECKOUT_SECRET_EXTENSION] !== undefined) declareCheckoutSecret(op)
      if (op[OPTIONAL_SCOPE_EXTENSION] !== undefined) op.security = [{}, { bearer: [] }]
      if (op.security === undefined) op.security = []
      if (op[ACCESS_EXTENSION] === undefined) op[ACCESS_EXTENSION] = 'unset'
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Berth hosting API',
      version: '1.0',
      description: `Self-service web hosting for agents: plans, checkout, sites, files, DNS, domains, keys.${info.testMode ? ' This server is in test mode: payments use the built-in test processor.' : ''}`,
      'x-berth-version': info.version,
      license: { name: 'Proprietary: the terms of the hoster running this server', url: `${info.baseUrl.replace(/\/api\/v1$/, '')}/terms` },
    },
    servers: [{ url: info.baseUrl }],
    tags: TAGS,
    paths: filtered,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key: {prefix}_ followed by 48 hex characters.' } },
      schemas: { Error: ErrorEnvelope },
      responses: errorResponses(),
    },
  }
}

/** The operations' groups, in the order a newcomer meets them. */
const TAGS = [
  { name: 'Discovery', description: 'What this server is and whether it is up; no key needed.' },
  { name: 'Plans', description: 'The hosting plans on sale, with prices, limits and features.' },
  { name: 'Identity', description: 'Register an account (its first key comes back once) and ask who a key belongs to.' },
  { name: 'Keys', description: "The account's API keys (scopes read, write, admin) and the claim flow that gives an agent with shell access a key for its own site." },
  { name: 'Checkout', description: 'Agentic Commerce Protocol checkout: create a session for a plan, name the site, pay; the site provisions once paid.' },
  { name: 'Sites', description: 'Sites in the account: list, create under an agency plan, scale to another plan, delete and restore.' },
  { name: 'Modules', description: "Optional features of a site's container, turned on and off per site as the plan allows." },
  { name: 'SSH', description: "SSH access to a site's container: the host port and the authorized public keys." },
  { name: 'Console', description: "A shell in a site's container over a WebSocket, for programs and, through a terminal page, for people: single-use tickets." },
  { name: 'Logs', description: "The newest lines of a site's access and error logs." },
  { name: 'Files', description: "A site's home folder: list, read, write, upload, make folders and delete, never outside the home." },
  { name: 'Databases', description: "Managed PostgreSQL, MariaDB and Redis for a site, each in a container of its own on the site's private network; their URLs reach the app as DATABASE_URL and {NAME}_URL; the plan's features.databases says how many, which engines and their memory and disk." },
  { name: 'Webhooks', description: "The account's webhook endpoints (admin scope): its events POSTed as they happen, signed per the Standard Webhooks specification (webhook-id, webhook-timestamp, webhook-signature), retried for three days, in order per endpoint; their deliveries listed and redelivered." },
  { name: 'Settings and secrets', description: "A site's environment variables for its app, build, deploy hook and exec; secrets sealed at rest with a key of the box, never shown again, masked in output and logs." },
  { name: 'Exec', description: "One command in a site's container as the site user (never root), answered with its exit code and output; at most 2 at once per site." },
  { name: 'Deployments', description: "Deploys of a site: each restarts the site's services and is kept as a record." },
  { name: 'Metrics', description: "A site's traffic per UTC day, counted by the edge, and its current CPU, memory and disk use." },
  { name: 'Snapshots and backups', description: "Archives of a site's files: snapshots taken on request, backups taken on a schedule, and restores from either." },
  { name: 'DNS', description: "A site's DNS records under its own name (A, AAAA, CNAME, MX, TXT, SRV), served by Berth's authoritative DNS server at once." },
  { name: 'Domains', description: "Domains through the registrar: search with CAD prices, register (paid with the account's payment method), DNS records, link to a site, settings." },
  { name: 'Events', description: 'What happened to your account and sites (a site up or down, a deploy, a payment, a certificate, a key...), oldest first from a cursor, kept 30 days; wait holds a request until the next one, so an agent without a public address hears of events without a tight loop.' },
  { name: 'Account', description: 'Your profile, your subscriptions (renewals, past due, cancel at period end) and the billing portal where the card on file is replaced, payments and receipts are listed and a subscription is canceled.' },
]

/**
 * The error statuses an operation can answer: implied by its declarations (keyed: 401, 403;
 * on a site: 404 and 503, and 409 when it changes the site; a body: 400, 413; rate-limited: 429;
 * always 422, for a query parameter the route does not take, and 500), plus its own `errors: [...]`.
 */
function errorStatusesOf(method: string, op: Record<string, any>): ErrorStatus[] {
  // Every API route refuses unknown query parameters (strict-query.ts), so 422 is always possible.
  const statuses = new Set<ErrorStatus>([422, 500])
  const keyed = op[ACCESS_EXTENSION] !== 'public' || op[OPTIONAL_SCOPE_EXTENSION] !== undefined
  if (keyed) statuses.add(401).add(403)
  if (op[SITE_EXTENSION] !== undefined) statuses.add(404).add(503)
  if (op[SITE_EXTENSION] === 'changeable') statuses.add(409)
  if (method !== 'get') statuses.add(400).add(413)
  if (op['x-berth-rate-limit'] !== undefined) statuses.add(429)
  for (const s of (op[ERRORS_EXTENSION] ?? []) as ErrorStatus[]) statuses.add(s)
  return [...statuses].sort((a, b) => a - b)
}

/** One shared response per error status: the envelope, the codes it carries, an example. */
function errorResponses() {
  return Object.fromEntries(Object.values(ERROR_STATUSES).map((e) => [e.name, {
    description: `${e.description} error.code: ${e.codes.join(' or ')}.`,
    content: {
      'application/json': {
        schema: { $ref: '#/components/schemas/Error' },
        example: { ok: false, error: { code: e.codes[0], message: e.description, param: null }, meta: { request_id: '0b6f7c1e-5d1a-4c8e-9f3a-2e4d5c6b7a80', timestamp: '2026-11-24T12:00:00.000Z' } },
      },
    },
  }]))
}

/**
 * An integer query parameter (QueryInteger) as the document states it: a bounded integer. Elysia's
 * t.Integer is a union of an "integer-like string" (with its own default 0) and the integer, so
 * that it can decode the query string; only the integer is what a caller sends, and an empty
 * value (`?lines=`) is refused with 422 like any other non-integer (strict-query.ts).
 */
function plainQueryInteger(schema: Record<string, unknown>): Record<string, unknown> {
  const branches = (schema.anyOf ?? []) as Record<string, unknown>[]
  const integer = branches.find((b) => b.type === 'integer') ?? schema
  const plain: Record<string, unknown> = { ...schema, ...integer, type: 'integer' }
  delete plain[QUERY_PARAM]
  delete plain.anyOf
  return plain
}

/**
 * A checkout session's secret, which the access plugin reads before validation from the query
 * (`checkout_secret`) or the X-Checkout-Secret header, and without which the session is 404 as
 * if it did not exist. The document requires the query form (what the links and the MCP tools
 * carry) and declares the header as its alternative: OpenAPI has no "one of two parameters".
 */
function declareCheckoutSecret(op: Record<string, unknown>): void {
  const params = (op.parameters ?? []) as Record<string, unknown>[]
  const query = params.find((p) => p.in === 'query' && p.name === 'checkout_secret')
  if (!query) throw new Error(`${String(op.operationId)}: a route with checkoutSecret declares the checkout_secret query parameter (CheckoutSecretQuery)`)
  query.required = true
  query.description = 'The checkout_secret that creating the checkout returned (or send it as the X-Checkout-Secret header instead). Without it, or with another, the session is 404 as if it did not exist.'
  params.push({
    in: 'header', name: 'X-Checkout-Secret', required: false, schema: { type: 'string', maxLength: 200 }, example: exampleOf({ type: 'string' }, 'checkout_secret'),
    description: 'The checkout_secret, as a header: the alternative to the query parameter, for clients that keep secrets out of URLs; the query parameter wins when both are sent.',
  })
  op.parameters = params
  delete op[CHECKOUT_SECRET_EXTENSION]
}

/**
 * Patterns as the document states them, read the same by ECMA-262 (with the `u` flag, as JSON
 * Schema validators compile them) and by Python's `re` (issue 36): the plain-text rule over code
 * points (TEXT_PATTERN is written for the request validator, which reads UTF-16 code units) with
 * a Text field's length as minLength and maxLength (TEXT_LENGTH), and
 * `$` as the end of the value (endOfValue). For ECMA-262 each published pattern means what the
 * validator's does; openapi-patterns.test.ts holds server, ajv and Python to the same verdicts.
 */
function publishPatterns(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(publishPatterns)
  if (typeof node !== 'object' || node === null) return
  const obj = node as Record<string, unknown>
  const length = textLengthOf(obj)
  if (length) {
    if (length.minLength > 0) obj.minLength = length.minLength
    obj.maxLength = length.maxLength
    delete obj[TEXT_LENGTH]
  }
  if (length || obj.pattern === TEXT_PATTERN) obj.pattern = PUBLISHED_TEXT_PATTERN
  if (typeof obj.pattern === 'string') obj.pattern = endOfValue(obj.pattern)
  for (const [key, value] of Object.entries(obj)) if (key !== 'example' && key !== 'examples') publishPatterns(value)
}

/**
 * Removes the validator's own error messages (`error: '...'` in a TypeBox schema, which the
 * server uses for its 422 text) from the published schemas: not a JSON Schema keyword.
 * A property named `error` (an object schema) stays.
 */
function stripCustomMessages(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(stripCustomMessages)
  if (typeof node !== 'object' || node === null) return
  const obj = node as Record<string, unknown>
  if ('error' in obj && (typeof obj.error === 'string' || typeof obj.error === 'function')) delete obj.error
  for (const value of Object.values(obj)) stripCustomMessages(value)
}
