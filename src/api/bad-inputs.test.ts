/**
 * Bad inputs against the API core (register, whoami, keys, plans, checkout), table-driven; the
 * site routes have their own tables (bad-inputs-sites.test.ts, bad-inputs-site-features.test.ts).
 *
 * Each row is one request and the error it must get: status, `error.code` and `error.param`.
 * For every row the test also checks that the body is the error envelope (design.md, "Envelope,
 * errors, status codes"), that it leaks no stack trace or host path, and that nothing in the store
 * was created or changed by the request.
 *
 * Paths may name fixture keys: {own} is the admin key's id, {revoked} a revoked key of the same
 * account, {other} another account's key. `as` picks the fixture key sent as the bearer key;
 * `auth` sends a raw Authorization header instead.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../test/helpers/in-process'

type FixtureKey = 'admin' | 'reader' | 'revoked' | 'rotated'

interface Row {
  name: string
  method: string
  path: string
  as?: FixtureKey
  auth?: string
  /** Sent JSON-encoded with Content-Type: application/json. */
  body?: unknown
  /** Sent as-is. */
  raw?: string
  /** Sent chunked (a stream without Content-Length) of this many bytes. */
  chunked?: number
  headers?: Record<string, string>
  /** [status, error.code, error.param] */
  expect: [number, string, string | null]
  /** The message must match: it names the field or says what to do. */
  says?: RegExp
  /** Extra response header that must be present, such as Allow on a 405. */
  header?: [string, string]
  /** Upper bound on the answer time, in milliseconds. */
  within?: number
}

const V1 = '/api/v1'
const UNKNOWN_UUID = '123e4567-e89b-42d3-a456-426614174000'
const HEX48 = 'a1b2c3d4e5f6'.repeat(4)
const TEN_MB = 10 * 1024 * 1024
/** A valid register body, padded to 10 MB: only its size is wrong. */
const TEN_MB_JSON = `{"name":"big","email":"a@example.com"${' '.repeat(TEN_MB)}}`
const SQL = encodeURIComponent("1' OR '1'='1")
const DROP = encodeURIComponent("'; DROP TABLE api_keys; --")
const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth)

/** The row for a path ending in '/', and the same row without the trailing slash: both must answer alike. */
function bothWays(row: Row): Row[] {
  const [path, query] = row.path.split('?')
  const bare = path.replace(/\/$/, '') + (query === undefined ? '' : `?${query}`)
  return [{ ...row, name: `${row.name} (with trailing slash)` }, { ...row, name: `${row.name} (without trailing slash)`, path: bare }]
}

const rows: Row[] = [
  // ---- POST /auth/register/ ----
  { name: 'register: name as a number', method: 'POST', path: `${V1}/auth/register/`, body: { name: 5 }, expect: [422, 'VALIDATION_ERROR', 'name'], says: /'name'.*string/ },
  { name: 'register: name as null', method: 'POST', path: `${V1}/auth/register/`, body: { name: null }, expect: [422, 'VALIDATION_ERROR', 'name'] },
  { name: 'register: name empty', method: 'POST', path: `${V1}/auth/register/`, body: { name: '' }, expect: [422, 'VALIDATION_ERROR', 'name'], says: /'name' must not be empty/ },
  { name: 'register: name of 101 characters', method: 'POST', path: `${V1}/auth/register/`, body: { name: 'n'.repeat(101) }, expect: [422, 'VALIDATION_ERROR', 'name'], says: /'name'.*at most 100/ },
  { name: 'register: email without @', method: 'POST', path: `${V1}/auth/register/`, body: { email: 'agent.example.com' }, expect: [422, 'VALIDATION_ERROR', 'email'], says: /'email'.*email address/ },
  { name: 'register: email as an array', method: 'POST', path: `${V1}/auth/register/`, body: { email: ['a@example.com'] }, expect: [422, 'VALIDATION_ERROR', 'email'] },
  { name: 'register: email empty', method: 'POST', path: `${V1}/auth/register/`, body: { email: '' }, expect: [422, 'VALIDATION_ERROR', 'email'] },
  { name: 'register: email of 256 characters', method: 'POST', path: `${V1}/auth/register/`, body: { email: `${'a'.repeat(244)}@example.com` }, expect: [422, 'VALIDATION_ERROR', 'email'] },
  { name: 'register: unknown field', method: 'POST', path: `${V1}/auth/register/`, body: { nmae: 'typo' }, expect: [422, 'VALIDATION_ERROR', 'nmae'], says: /'nmae'.*remove it/ },
  { name: 'register: unknown field beside valid ones', method: 'POST', path: `${V1}/auth/register/`, body: { name: 'ok', email: 'a@example.com', admin: true }, expect: [422, 'VALIDATION_ERROR', 'admin'] },
  { name: 'register: __proto__ field', method: 'POST', path: `${V1}/auth/register/`, raw: '{"__proto__":{"admin":true}}', expect: [422, 'VALIDATION_ERROR', '__proto__'] },
  { name: 'register: JSON array body', method: 'POST', path: `${V1}/auth/register/`, raw: '[{"name":"x"}]', expect: [422, 'VALIDATION_ERROR', null], says: /JSON object/ },
  { name: 'register: JSON number body', method: 'POST', path: `${V1}/auth/register/`, raw: '42', expect: [422, 'VALIDATION_ERROR', null], says: /JSON object/ },
  { name: 'register: JSON string body', method: 'POST', path: `${V1}/auth/register/`, raw: '"hello"', expect: [422, 'VALIDATION_ERROR', null] },
  { name: 'register: JSON null body', method: 'POST', path: `${V1}/auth/register/`, raw: 'null', expect: [422, 'VALIDATION_ERROR', null] },
  { name: 'register: truncated JSON "{bad"', method: 'POST', path: `${V1}/auth/register/`, raw: '{bad', headers: { 'content-type': 'application/json' }, expect: [400, 'VALIDATION_ERROR', null], says: /not valid JSON.*send a JSON object/ },
  { name: 'register: XML body', method: 'POST', path: `${V1}/auth/register/`, raw: '<xml/>', headers: { 'content-type': 'application/xml' }, expect: [400, 'VALIDATION_ERROR', null], says: /JSON/ },
  { name: 'register: bare text body', method: 'POST', path: `${V1}/auth/register/`, raw: 'hello', headers: { 'content-type': 'text/plain' }, expect: [400, 'VALIDATION_ERROR', null] },
  { name: 'register: form-encoded body', method: 'POST', path: `${V1}/auth/register/`, raw: 'name=agent&email=a%40example.com', headers: { 'content-type': 'application/x-www-form-urlencoded' }, expect: [400, 'VALIDATION_ERROR', null] },
  { name: 'register: 10 MB body with Content-Length', method: 'POST', path: `${V1}/auth/register/`, raw: TEN_MB_JSON, headers: { 'content-length': String(TEN_MB_JSON.length) }, expect: [413, 'PAYLOAD_TOO_LARGE', null], says: /smaller body/ },
  { name: 'register: 10 MB body chunked', method: 'POST', path: `${V1}/auth/register/`, chunked: TEN_MB, expect: [413, 'PAYLOAD_TOO_LARGE', null], says: /smaller body/ },
  { name: 'register: Content-Length claiming 10 MB', method: 'POST', path: `${V1}/auth/register/`, raw: '{}', headers: { 'content-length': String(TEN_MB) }, expect: [413, 'PAYLOAD_TOO_LARGE', null] },
  { name: 'register: name nested 64 arrays deep (65 levels)', method: 'POST', path: `${V1}/auth/register/`, raw: `{"name":${nested(64)}}`, expect: [400, 'VALIDATION_ERROR', null], says: /more than 64 levels/ },
  { name: 'register: name nested 5,000 arrays deep (10 KB)', method: 'POST', path: `${V1}/auth/register/`, raw: `{"name":${nested(5000)}}`, expect: [400, 'VALIDATION_ERROR', null] },
  { name: 'register: body nested 10,000 arrays deep (20 KB), answered fast', method: 'POST', path: `${V1}/auth/register/`, raw: nested(10_000), expect: [400, 'VALIDATION_ERROR', null], within: 500 },
  { name: 'keys create: scopes nested 5,000 arrays deep', method: 'POST', path: `${V1}/keys/create/`, as: 'admin', raw: `{"scopes":${nested(5000)}}`, expect: [400, 'VALIDATION_ERROR', null] },
  ...bothWays({ name: 'register: name as a number', method: 'POST', path: `${V1}/auth/register/`, body: { name: 5 }, expect: [422, 'VALIDATION_ERROR', 'name'] }),

  // ---- GET /auth/whoami/: every malformed or dead key is 401 ----
  { name: 'whoami: no Authorization header', method: 'GET', path: `${V1}/auth/whoami/`, expect: [401, 'UNAUTHORIZED', null], says: /Authorization: Bearer.*register/, header: ['www-authenticate', 'Bearer'] },
  { name: 'whoami: Basic credentials', method: 'GET', path: `${V1}/auth/whoami/`, auth: 'Basic dXNlcjpwYXNz', expect: [401, 'UNAUTHORIZED', null], header: ['www-authenticate', 'Bearer'] },
  { name: 'whoami: "Bearer " with no key', method: 'GET', path: `${V1}/auth/whoami/`, auth: 'Bearer ', expect: [401, 'UNAUTHORIZED', null] },
  { name: 'whoami: key without the Bearer scheme', method: 'GET', path: `${V1}/auth/whoami/`, auth: `svc_${HEX48}`, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'whoami: Token scheme', method: 'GET', path: `${V1}/auth/whoami/`, auth: `Token svc_${HEX48}`, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'whoami: key with the wrong prefix', method: 'GET', path: `${V1}/auth/whoami/`, auth: `Bearer sk_${HEX48}`, expect: [401, 'UNAUTHORIZED', null], says: /svc_.*48/ },
  { name: 'whoami: key of 47 hex characters', method: 'GET', path: `${V1}/auth/whoami/`, auth: `Bearer svc_${HEX48.slice(1)}`, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'whoami: key of 49 hex characters', method: 'GET', path: `${V1}/auth/whoami/`, auth: `Bearer svc_${HEX48}0`, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'whoami: key in uppercase hex', method: 'GET', path: `${V1}/auth/whoami/`, auth: `Bearer svc_${HEX48.toUpperCase()}`, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'whoami: well-formed key nobody holds', method: 'GET', path: `${V1}/auth/whoami/`, auth: `Bearer svc_${HEX48}`, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'whoami: revoked key', method: 'GET', path: `${V1}/auth/whoami/`, as: 'revoked', expect: [401, 'UNAUTHORIZED', null], says: /revoked/ },
  { name: 'whoami: rotated key', method: 'GET', path: `${V1}/auth/whoami/`, as: 'rotated', expect: [401, 'UNAUTHORIZED', null], says: /rotated.*use the key the rotation returned/ },
  ...bothWays({ name: 'whoami: no Authorization header', method: 'GET', path: `${V1}/auth/whoami/`, expect: [401, 'UNAUTHORIZED', null] }),

  // ---- GET /keys/ ----
  { name: 'keys list: include_revoked=2', method: 'GET', path: `${V1}/keys/?include_revoked=2`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'include_revoked'], says: /'include_revoked'.*true or false/ },
  { name: 'keys list: include_revoked=yes', method: 'GET', path: `${V1}/keys/?include_revoked=yes`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'include_revoked'] },
  { name: 'keys list: unknown query parameter', method: 'GET', path: `${V1}/keys/?include_revoke=true`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'include_revoke'] },
  { name: 'keys list: no key', method: 'GET', path: `${V1}/keys/`, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'keys list: revoked key', method: 'GET', path: `${V1}/keys/`, as: 'revoked', expect: [401, 'UNAUTHORIZED', null] },
  { name: 'keys list: rotated key', method: 'GET', path: `${V1}/keys/`, as: 'rotated', expect: [401, 'UNAUTHORIZED', null] },
  ...bothWays({ name: 'keys list: include_revoked=2', method: 'GET', path: `${V1}/keys/?include_revoked=2`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'include_revoked'] }),

  // ---- POST /keys/create/ ----
  { name: 'keys create: scopes as a string', method: 'POST', path: `${V1}/keys/create/`, as: 'admin', body: { scopes: 'read' }, expect: [422, 'VALIDATION_ERROR', 'scopes'], says: /'scopes'.*array of read, write, admin/ },
  { name: 'keys create: scopes containing a number', method: 'POST', path: `${V1}/keys/create/`, as: 'admin', body: { scopes: ['read', 1] }, expect: [422, 'VALIDATION_ERROR', 'scopes'], says: /scopes/ },
  { name: 'keys create: unknown scope "root"', method: 'POST', path: `${V1}/keys/create/`, as: 'admin', body: { scopes: ['root'] }, expect: [422, 'VALIDATION_ERROR', 'scopes'], says: /scopes.*one of read, write, admin/ },
  { name: 'keys create: unknown scope "ADMIN"', method: 'POST', path: `${V1}/keys/create/`, as: 'admin', body: { scopes: ['ADMIN'] }, expect: [422, 'VALIDATION_ERROR', 'scopes'] },
  { name: 'keys create: empty scopes array', method: 'POST', path: `${V1}/keys/create/`, as: 'admin', body: { scopes: [] }, expect: [422, 'VALIDATION_ERROR', 'scopes'], says: /at least one scope/ },
  { name: 'keys create: unknown field "scope"', method: 'POST', path: `${V1}/keys/create/`, as: 'admin', body: { scope: ['read'] }, expect: [422, 'VALIDATION_ERROR', 'scope'], says: /Unknown field 'scope'/ },
  { name: 'keys create: name as a number', method: 'POST', path: `${V1}/keys/create/`, as: 'admin', body: { name: 7, scopes: ['read'] }, expect: [422, 'VALIDATION_ERROR', 'name'] },
  { name: 'keys create: name empty', method: 'POST', path: `${V1}/keys/create/`, as: 'admin', body: { name: '' }, expect: [422, 'VALIDATION_ERROR', 'name'] },
  { name: 'keys create: name of 101 characters', method: 'POST', path: `${V1}/keys/create/`, as: 'admin', body: { name: 'n'.repeat(101) }, expect: [422, 'VALIDATION_ERROR', 'name'] },
  { name: 'keys create: JSON array body', method: 'POST', path: `${V1}/keys/create/`, as: 'admin', raw: '["read"]', expect: [422, 'VALIDATION_ERROR', null] },
  { name: 'keys create: JSON number body', method: 'POST', path: `${V1}/keys/create/`, as: 'admin', raw: '1', expect: [422, 'VALIDATION_ERROR', null] },
  { name: 'keys create: truncated JSON', method: 'POST', path: `${V1}/keys/create/`, as: 'admin', raw: '{"scopes":["read"', expect: [400, 'VALIDATION_ERROR', null] },
  { name: 'keys create: form-encoded body', method: 'POST', path: `${V1}/keys/create/`, as: 'admin', raw: 'scopes=read', headers: { 'content-type': 'application/x-www-form-urlencoded' }, expect: [400, 'VALIDATION_ERROR', null] },
  { name: 'keys create: 10 MB body with Content-Length', method: 'POST', path: `${V1}/keys/create/`, as: 'admin', raw: TEN_MB_JSON, headers: { 'content-length': String(TEN_MB_JSON.length) }, expect: [413, 'PAYLOAD_TOO_LARGE', null] },
  { name: 'keys create: 10 MB body chunked', method: 'POST', path: `${V1}/keys/create/`, as: 'admin', chunked: TEN_MB, expect: [413, 'PAYLOAD_TOO_LARGE', null] },
  { name: 'keys create: read-only key', method: 'POST', path: `${V1}/keys/create/`, as: 'reader', body: { scopes: ['read'] }, expect: [403, 'FORBIDDEN', null], says: /lacks the 'admin' scope/ },
  { name: 'keys create: no key', method: 'POST', path: `${V1}/keys/create/`, body: { scopes: ['read'] }, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'keys create: read-only key and an invalid body', method: 'POST', path: `${V1}/keys/create/`, as: 'reader', body: { scopes: 'read' }, expect: [403, 'FORBIDDEN', null] },
  { name: 'keys create: no key and an invalid body', method: 'POST', path: `${V1}/keys/create/`, body: { scopes: 'read' }, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'keys create: rotated key', method: 'POST', path: `${V1}/keys/create/`, as: 'rotated', body: { scopes: ['read'] }, expect: [401, 'UNAUTHORIZED', null] },
  ...bothWays({ name: 'keys create: unknown scope "root"', method: 'POST', path: `${V1}/keys/create/`, as: 'admin', body: { scopes: ['root'] }, expect: [422, 'VALIDATION_ERROR', 'scopes'] }),

  // ---- POST /keys/{key_id}/revoke/ ----
  { name: 'revoke: key_id "not-a-uuid"', method: 'POST', path: `${V1}/keys/not-a-uuid/revoke/`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'key_id'], says: /'key_id'.*UUID such as/ },
  { name: 'revoke: key_id "123"', method: 'POST', path: `${V1}/keys/123/revoke/`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'key_id'] },
  { name: 'revoke: key_id a UUID with a trailing character', method: 'POST', path: `${V1}/keys/{own}x/revoke/`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'key_id'] },
  { name: 'revoke: key_id SQL injection', method: 'POST', path: `${V1}/keys/${SQL}/revoke/`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'key_id'] },
  { name: 'revoke: key_id DROP TABLE', method: 'POST', path: `${V1}/keys/${DROP}/revoke/`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'key_id'] },
  { name: 'revoke: key_id with broken percent-encoding', method: 'POST', path: `${V1}/keys/%ZZ/revoke/`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'key_id'] },
  { name: 'revoke: well-formed unknown key_id', method: 'POST', path: `${V1}/keys/${UNKNOWN_UUID}/revoke/`, as: 'admin', expect: [404, 'NOT_FOUND', 'key_id'], says: /GET \/keys\// },
  { name: "revoke: another account's key (404, never 403)", method: 'POST', path: `${V1}/keys/{other}/revoke/`, as: 'admin', expect: [404, 'NOT_FOUND', 'key_id'] },
  { name: 'revoke: a body with a field (the route takes none)', method: 'POST', path: `${V1}/keys/{revoked}/revoke/`, as: 'admin', body: { reason: 'leaked' }, expect: [422, 'VALIDATION_ERROR', 'reason'], says: /takes no body; remove the field 'reason'/ },
  { name: 'revoke: read-only key', method: 'POST', path: `${V1}/keys/{own}/revoke/`, as: 'reader', expect: [403, 'FORBIDDEN', null] },
  { name: 'revoke: no key', method: 'POST', path: `${V1}/keys/{own}/revoke/`, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'revoke: no key and a malformed key_id', method: 'POST', path: `${V1}/keys/not-a-uuid/revoke/`, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'revoke: revoked key', method: 'POST', path: `${V1}/keys/{own}/revoke/`, as: 'revoked', expect: [401, 'UNAUTHORIZED', null] },
  ...bothWays({ name: 'revoke: key_id "not-a-uuid"', method: 'POST', path: `${V1}/keys/not-a-uuid/revoke/`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'key_id'] }),

  // ---- POST /keys/{key_id}/rotate/ ----
  { name: 'rotate: key_id "not-a-uuid"', method: 'POST', path: `${V1}/keys/not-a-uuid/rotate/`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'key_id'] },
  { name: 'rotate: key_id "123"', method: 'POST', path: `${V1}/keys/123/rotate/`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'key_id'] },
  { name: 'rotate: key_id a UUID with a trailing character', method: 'POST', path: `${V1}/keys/{own}0/rotate/`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'key_id'] },
  { name: 'rotate: key_id SQL injection', method: 'POST', path: `${V1}/keys/${SQL}/rotate/`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'key_id'] },
  { name: 'rotate: well-formed unknown key_id', method: 'POST', path: `${V1}/keys/${UNKNOWN_UUID}/rotate/`, as: 'admin', expect: [404, 'NOT_FOUND', 'key_id'] },
  { name: "rotate: another account's key (404, never 403)", method: 'POST', path: `${V1}/keys/{other}/rotate/`, as: 'admin', expect: [404, 'NOT_FOUND', 'key_id'] },
  { name: 'rotate: a key already revoked', method: 'POST', path: `${V1}/keys/{revoked}/rotate/`, as: 'admin', expect: [409, 'CONFLICT', 'key_id'], says: /POST \/keys\/create\// },
  { name: 'rotate: a body with a field (the route takes none)', method: 'POST', path: `${V1}/keys/{own}/rotate/`, as: 'admin', body: { name: 'new' }, expect: [422, 'VALIDATION_ERROR', 'name'] },
  { name: 'rotate: read-only key', method: 'POST', path: `${V1}/keys/{own}/rotate/`, as: 'reader', expect: [403, 'FORBIDDEN', null] },
  { name: 'rotate: rotated key', method: 'POST', path: `${V1}/keys/{own}/rotate/`, as: 'rotated', expect: [401, 'UNAUTHORIZED', null] },
  ...bothWays({ name: "rotate: another account's key", method: 'POST', path: `${V1}/keys/{other}/rotate/`, as: 'admin', expect: [404, 'NOT_FOUND', 'key_id'] }),

  // ---- GET /plans/ ----
  { name: 'plans: track=foo', method: 'GET', path: `${V1}/plans/?track=foo`, expect: [422, 'VALIDATION_ERROR', 'track'], says: /'track'.*single_site, agency/ },
  { name: 'plans: track=SINGLE_SITE', method: 'GET', path: `${V1}/plans/?track=SINGLE_SITE`, expect: [422, 'VALIDATION_ERROR', 'track'] },
  { name: 'plans: include_deprecated=maybe', method: 'GET', path: `${V1}/plans/?include_deprecated=maybe`, expect: [422, 'VALIDATION_ERROR', 'include_deprecated'], says: /true or false/ },
  { name: 'plans: unknown query parameter', method: 'GET', path: `${V1}/plans/?trak=agency`, expect: [422, 'VALIDATION_ERROR', 'trak'] },
  ...bothWays({ name: 'plans: track=foo', method: 'GET', path: `${V1}/plans/?track=foo`, expect: [422, 'VALIDATION_ERROR', 'track'] }),

  // ---- GET /plans/{plan_slug}/ ----
  { name: 'plan: unknown slug', method: 'GET', path: `${V1}/plans/no-such-plan/`, expect: [404, 'NOT_FOUND', 'plan_slug'], says: /GET \/plans\// },
  { name: 'plan: slug of 101 characters', method: 'GET', path: `${V1}/plans/${'p'.repeat(101)}/`, expect: [422, 'VALIDATION_ERROR', 'plan_slug'] },
  { name: 'plan: slug with an encoded path traversal', method: 'GET', path: `${V1}/plans/..%2F..%2Fetc%2Fpasswd/`, expect: [404, 'NOT_FOUND', 'plan_slug'] },
  { name: 'plan: slug SQL injection', method: 'GET', path: `${V1}/plans/${SQL}/`, expect: [404, 'NOT_FOUND', 'plan_slug'] },
  ...bothWays({ name: 'plan: unknown slug', method: 'GET', path: `${V1}/plans/no-such-plan/`, expect: [404, 'NOT_FOUND', 'plan_slug'] }),

  // ---- POST /acp/checkouts/ with a bearer key, and cancel ----
  { name: 'checkout: a read-only key as bearer (buying needs admin)', method: 'POST', path: `${V1}/acp/checkouts/`, as: 'reader', body: { sku: 'svc_starter_monthly' }, expect: [403, 'FORBIDDEN', null], says: /'admin' scope/ },
  { name: 'checkout: a rotated key as bearer', method: 'POST', path: `${V1}/acp/checkouts/`, as: 'rotated', body: { sku: 'svc_starter_monthly' }, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'checkout cancel: a body with a field, on a session the caller has no secret for (404 first)', method: 'POST', path: `${V1}/acp/checkouts/${UNKNOWN_UUID}/cancel/?checkout_secret=cks_x`, body: { reason: 'changed my mind' }, expect: [404, 'NOT_FOUND', 'checkout_id'] },

  // ---- GET /status/ ----
  ...bothWays({ name: 'status: POST', method: 'POST', path: `${V1}/status/`, body: {}, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'GET'] }),

  // ---- unknown routes ----
  { name: 'unknown route under /api/v1', method: 'GET', path: `${V1}/nope/`, expect: [404, 'NOT_FOUND', null], says: /openapi\.json/ },
  { name: 'unknown route: a single key', method: 'GET', path: `${V1}/keys/{own}/`, as: 'admin', expect: [404, 'NOT_FOUND', null] },
  { name: 'unknown route: another API version', method: 'GET', path: '/api/v2/status/', expect: [404, 'NOT_FOUND', null] },
  { name: 'unknown route: double slash', method: 'GET', path: `${V1}//status/`, expect: [404, 'NOT_FOUND', null] },
  { name: 'unknown route: POST outside the API', method: 'POST', path: '/wp-login.php', raw: 'log=admin&pwd=x', expect: [404, 'NOT_FOUND', null] },

  // ---- wrong methods: 405 with Allow ----
  { name: 'wrong method: GET /auth/register/', method: 'GET', path: `${V1}/auth/register/`, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'POST'], says: /use POST/ },
  { name: 'wrong method: PUT /auth/whoami/', method: 'PUT', path: `${V1}/auth/whoami/`, as: 'admin', expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'GET'] },
  { name: 'wrong method: DELETE /keys/', method: 'DELETE', path: `${V1}/keys/`, as: 'admin', expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'GET'] },
  { name: 'wrong method: GET /keys/create/', method: 'GET', path: `${V1}/keys/create/`, as: 'admin', expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'POST'] },
  { name: 'wrong method: PUT /keys/create/ with a body', method: 'PUT', path: `${V1}/keys/create/`, as: 'admin', body: { scopes: ['read'] }, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'POST'] },
  { name: 'wrong method: GET /keys/{id}/revoke/', method: 'GET', path: `${V1}/keys/{own}/revoke/`, as: 'admin', expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'POST'] },
  { name: 'wrong method: DELETE /keys/{id}/revoke/', method: 'DELETE', path: `${V1}/keys/{own}/revoke/`, as: 'admin', expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'POST'] },
  { name: 'wrong method: PATCH /keys/{id}/rotate/', method: 'PATCH', path: `${V1}/keys/{own}/rotate/`, as: 'admin', expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'POST'] },
  { name: 'wrong method: DELETE /plans/', method: 'DELETE', path: `${V1}/plans/`, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'GET'] },
  { name: 'wrong method: POST /plans/{slug}/', method: 'POST', path: `${V1}/plans/no-such-plan/`, body: {}, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'GET'] },
  { name: 'wrong method: OPTIONS /status/', method: 'OPTIONS', path: `${V1}/status/`, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'GET'] },
]

// ---------------------------------------------------------------------------------------------

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
/** What a leaked stack trace or host path looks like. */
const LEAK = /\n\s+at |node_modules|\/src\/|\.[cm]?[jt]s:\d+|\/work\/|\/home\/|\/tmp\//

const h = inProcess()
const fixture = { keys: {} as Record<FixtureKey, string>, ids: {} as Record<'own' | 'revoked' | 'other', string> }

beforeAll(async () => {
  const admin = await h.register()
  const create = async (scopes: string[]) => {
    const res = await h.call('POST', `${V1}/keys/create/`, { key: admin.key, body: { scopes } })
    if (res.status !== 201) throw new Error(`fixture key: ${res.status} ${res.text}`)
    return res.json.data as { api_key: string; key_id: string }
  }
  const reader = await create(['read'])
  const revoked = await create(['read', 'write'])
  const toRotate = await create(['read', 'write', 'admin'])
  const done = await Promise.all([
    h.call('POST', `${V1}/keys/${revoked.key_id}/revoke/`, { key: admin.key }),
    h.call('POST', `${V1}/keys/${toRotate.key_id}/rotate/`, { key: admin.key }),
  ])
  if (done.some((r) => r.status !== 200)) throw new Error(`fixture revoke/rotate failed: ${done.map((r) => r.text).join(' ')}`)
  const other = await h.register()
  fixture.keys = { admin: admin.key, reader: reader.api_key, revoked: revoked.api_key, rotated: toRotate.api_key }
  fixture.ids = { own: admin.keyId, revoked: revoked.key_id, other: other.keyId }
})
afterAll(() => h.close())

/** Builds the row's Request and sends it through the app; each row poses as its own client address. */
async function send(row: Row, index: number) {
  const headers = new Headers({ 'x-forwarded-for': `198.18.${index >> 8}.${index & 255}`, ...row.headers })
  if (row.as) headers.set('authorization', `Bearer ${fixture.keys[row.as]}`)
  if (row.auth !== undefined) headers.set('authorization', row.auth)
  let body: BodyInit | undefined = row.raw
  if (row.body !== undefined) {
    body = JSON.stringify(row.body)
    if (!headers.has('content-type')) headers.set('content-type', 'application/json')
  }
  if (row.chunked !== undefined) body = chunks(row.chunked)
  const path = row.path.replace(/\{(own|revoked|other)\}/g, (_, name: keyof typeof fixture.ids) => fixture.ids[name])
  const started = performance.now()
  const res = await h.app.handle(new Request(`http://localhost${path}`, { method: row.method, headers, body, duplex: 'half' } as RequestInit))
  const text = await res.text()
  return { status: res.status, headers: res.headers, text, json: JSON.parse(text), ms: performance.now() - started }
}

/** A body without Content-Length: `total` spaces in 64 KB chunks, produced on demand. */
function chunks(total: number): ReadableStream<Uint8Array> {
  let left = total
  return new ReadableStream({
    pull(controller) {
      const size = Math.min(left, 64 * 1024)
      left -= size
      controller.enqueue(new Uint8Array(size).fill(0x20))
      if (left === 0) controller.close()
    },
  })
}

/** Everything a bad request must leave alone: the rows of accounts and keys, and rate-limit hits. */
function snapshot() {
  const one = (sql: string) => Object.values(h.services.store.sqlite.query(sql).get() as Record<string, unknown>)[0]
  return {
    accounts: one('SELECT count(*) FROM accounts'),
    keys: one('SELECT count(*) FROM api_keys'),
    activeKeys: one('SELECT count(*) FROM api_keys WHERE revoked_at IS NULL'),
    rateLimitHits: one('SELECT count(*) FROM rate_limit_hits'),
    accountRows: one("SELECT group_concat(id || coalesce(email, '-') || name || status || updated_at, ';') FROM (SELECT * FROM accounts ORDER BY id)"),
    keyRows: one("SELECT group_concat(id || name || scopes || coalesce(revoked_at, '-') || coalesce(revoked_reason, '-') || coalesce(replaced_by, '-'), ';') FROM (SELECT * FROM api_keys ORDER BY id)"),
  }
}

describe('bad inputs get the error envelope and change nothing', () => {
  it.each(rows.map((row, index) => ({ ...row, index })))('$name', async (row) => {
    const before = snapshot()
    const res = await send(row, row.index)
    const [status, code, param] = row.expect

    expect({ status: res.status, code: res.json.error?.code, param: res.json.error?.param }, res.text.slice(0, 300)).toEqual({ status, code, param })
    // The envelope, and nothing else.
    expect(Object.keys(res.json).sort()).toEqual(['error', 'meta', 'ok'])
    expect(res.json.ok).toBe(false)
    expect(Object.keys(res.json.error).sort()).toEqual(['code', 'message', 'param'])
    expect(res.json.error.message).toMatch(/^[A-Z].{10,}\.$/s)
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
    expect(res.json.meta.request_id).toMatch(UUID)
    expect(res.headers.get('x-request-id')).toBe(res.json.meta.request_id)
    expect(new Date(res.json.meta.timestamp).toISOString()).toBe(res.json.meta.timestamp)
    // No stack trace, no host path.
    expect(res.text).not.toMatch(LEAK)
    expect(res.text).not.toContain(h.dir)
    if (row.says) expect(res.json.error.message).toMatch(row.says)
    if (row.header) expect(res.headers.get(row.header[0])).toBe(row.header[1])
    if (row.within) expect(res.ms, `answered in ${Math.round(res.ms)} ms`).toBeLessThan(row.within)
    // Nothing created or changed.
    expect(snapshot()).toEqual(before)
  })

  it('stops reading a chunked body soon after it passes the limit', async () => {
    let pulled = 0
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++
        controller.enqueue(new Uint8Array(1024 * 1024).fill(0x20))
        if (pulled === 10) controller.close()
      },
    })
    const req = new Request(`http://localhost${V1}/auth/register/`, { method: 'POST', body, duplex: 'half' } as RequestInit)
    const res = await h.app.handle(req)
    expect(res.status).toBe(413)
    expect(pulled).toBeLessThanOrEqual(3)
  })
})
