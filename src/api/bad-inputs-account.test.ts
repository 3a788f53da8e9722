/**
 * Bad inputs against the account routes (issue 13), table-driven in the style of
 * bad-inputs.test.ts: POST /account/update/, DELETE /account/delete/, GET /account/subscriptions/
 * and GET /account/billing-portal/.
 *
 * Each row is one request and the error it must get: status, `error.code` and `error.param`. For
 * every row the test also checks the error envelope, that it leaks no stack trace or host path,
 * and that nothing changed: the account's fields, its keys, subscriptions, sites, payments and
 * containers (a refused delete must delete nothing).
 *
 * The fixture is an account that bought a site, with keys of every kind: `admin` (read, write,
 * admin), `reader` (read), `writer` (read, write), `adminOnly` (admin), `site` (site-scoped, from
 * the claim flow), `revoked`; and another account whose id rows may name as {other}.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../test/helpers/in-process'
import { bothWays, expectErrorAnswer, sendRow, SQL, TEN_MB, V1 } from '../../test/helpers/bad-inputs'
import type { RecordingRuntime } from '../../test/helpers/recording-runtime'

type FixtureKey = 'admin' | 'reader' | 'writer' | 'adminOnly' | 'site' | 'revoked'

interface Row {
  name: string
  method: string
  path: string
  /** The key sent as bearer: none when left out. */
  as?: FixtureKey
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
}

const UPDATE = `${V1}/account/update/`
const DELETE = `${V1}/account/delete/`
const SUBS = `${V1}/account/subscriptions/`
const PAYMENTS = `${V1}/account/payments/`
const PORTAL = `${V1}/account/billing-portal/`
const TEN_MB_JSON = `{"confirm":"DELETE"${' '.repeat(TEN_MB)}}`
const HUGE = 'x'.repeat(100_000)

/** The same field with each bad value; all must get 422 naming the field. */
const eachValue = (route: string, method: string, field: string, values: [string, unknown][], says?: RegExp): Row[] =>
  values.map(([what, value]) => ({ name: `${route}: ${field} ${what}`, method, path: route === 'update' ? UPDATE : DELETE, as: 'admin', body: { [field]: value }, expect: [422, 'VALIDATION_ERROR', field], says }))

const NOT_TEXT: [string, unknown][] = [
  ['as a number', 42], ['as null', null], ['as true', true], ['as an array', ['Ada']], ['as an object', { given: 'Ada' }],
  ['with a NUL', 'Ada\u0000'], ['with a newline', 'Ada\nLovelace'], ['with a tab', 'Ada\tLovelace'], ['with an ANSI escape', 'Ada\u001b[31m'],
  ['with DEL', 'Ada\u007f'], ['with a C1 control', 'Ada\u0085'],
]

const rows: Row[] = [
  // ---- POST /account/update/ ----
  ...eachValue('update', 'POST', 'email', [
    ['as a number', 5], ['as null', null], ['as an array', ['ada@example.com']], ['as an object', { address: 'ada@example.com' }], ['empty', ''],
    ['without @', 'ada.example.com'], ['with two @', 'a@b@example.com'], ['with a space', 'ada lovelace@example.com'], ['with a trailing newline', 'ada@example.com\n'],
    ['of 255 characters', `${'a'.repeat(243)}@example.com`], ['of 100,000 characters', `${HUGE}@example.com`],
  ]),
  { name: 'update: email without @ says what is wrong', method: 'POST', path: UPDATE, as: 'admin', body: { email: 'ada.example.com' }, expect: [422, 'VALIDATION_ERROR', 'email'], says: /'email'.*email address/ },
  ...eachValue('update', 'POST', 'language', [['"de"', 'de'], ['"EN"', 'EN'], ['"fr-CA"', 'fr-CA'], ['" fr"', ' fr'], ['empty', ''], ['as null', null], ['as a number', 1], ['as an array', ['fr']], ['as true', true]]),
  { name: 'update: language "de" names the choices', method: 'POST', path: UPDATE, as: 'admin', body: { language: 'de' }, expect: [422, 'VALIDATION_ERROR', 'language'], says: /'language'.*en, fr/ },
  ...eachValue('update', 'POST', 'first_name', [...NOT_TEXT, ['empty', ''], ['of 101 characters', 'n'.repeat(101)], ['of 100,000 characters', HUGE]]),
  ...eachValue('update', 'POST', 'last_name', [...NOT_TEXT, ['empty', ''], ['of 101 characters', 'n'.repeat(101)]]),
  { name: 'update: first_name empty says so', method: 'POST', path: UPDATE, as: 'admin', body: { first_name: '' }, expect: [422, 'VALIDATION_ERROR', 'first_name'], says: /'first_name' must not be empty/ },
  { name: 'update: first_name of 101 characters says the limit', method: 'POST', path: UPDATE, as: 'admin', body: { first_name: 'n'.repeat(101) }, expect: [422, 'VALIDATION_ERROR', 'first_name'], says: /'first_name'.*at most 100/ },
  { name: 'update: first_name with a lone surrogate', method: 'POST', path: UPDATE, as: 'admin', raw: '{"first_name":"Ada\\ud800"}', expect: [422, 'VALIDATION_ERROR', 'first_name'] },
  { name: 'update: a bad field beside a good one changes neither', method: 'POST', path: UPDATE, as: 'admin', body: { email: 'new@example.com', language: 'de' }, expect: [422, 'VALIDATION_ERROR', 'language'] },
  { name: 'update: empty body', method: 'POST', path: UPDATE, as: 'admin', body: {}, expect: [422, 'VALIDATION_ERROR', null], says: /at least one of email, language, first_name, last_name/ },
  { name: 'update: no body at all', method: 'POST', path: UPDATE, as: 'admin', expect: [422, 'VALIDATION_ERROR', null], says: /at least one of/ },
  { name: 'update: unknown field', method: 'POST', path: UPDATE, as: 'admin', body: { nickname: 'Ada' }, expect: [422, 'VALIDATION_ERROR', 'nickname'], says: /Unknown field 'nickname'; remove it/ },
  { name: 'update: unknown field "name" (the register field) beside a valid one', method: 'POST', path: UPDATE, as: 'admin', body: { first_name: 'Ada', name: 'Ada L' }, expect: [422, 'VALIDATION_ERROR', 'name'] },
  { name: 'update: status (not writable)', method: 'POST', path: UPDATE, as: 'admin', body: { status: 'anonymized' }, expect: [422, 'VALIDATION_ERROR', 'status'] },
  { name: 'update: id of another account', method: 'POST', path: UPDATE, as: 'admin', body: { id: '{other}', email: 'x@example.com' }, expect: [422, 'VALIDATION_ERROR', 'id'] },
  { name: 'update: payment_method (not writable)', method: 'POST', path: UPDATE, as: 'admin', body: { payment_method: { label: 'visa ending 4242 (test)' } }, expect: [422, 'VALIDATION_ERROR', 'payment_method'] },
  { name: 'update: camelCase firstName', method: 'POST', path: UPDATE, as: 'admin', body: { firstName: 'Ada' }, expect: [422, 'VALIDATION_ERROR', 'firstName'] },
  { name: 'update: __proto__ field', method: 'POST', path: UPDATE, as: 'admin', raw: '{"__proto__":{"email":"x@example.com"}}', expect: [422, 'VALIDATION_ERROR', '__proto__'] },
  { name: 'update: duplicate key, the last one bad', method: 'POST', path: UPDATE, as: 'admin', raw: '{"language":"fr","language":"de"}', expect: [422, 'VALIDATION_ERROR', 'language'] },
  { name: 'update: JSON array body', method: 'POST', path: UPDATE, as: 'admin', raw: '[{"language":"fr"}]', expect: [422, 'VALIDATION_ERROR', null], says: /JSON object/ },
  { name: 'update: JSON null body', method: 'POST', path: UPDATE, as: 'admin', raw: 'null', expect: [422, 'VALIDATION_ERROR', null] },
  { name: 'update: JSON string body', method: 'POST', path: UPDATE, as: 'admin', raw: '"fr"', expect: [422, 'VALIDATION_ERROR', null] },
  { name: 'update: truncated JSON', method: 'POST', path: UPDATE, as: 'admin', raw: '{"language":"fr"', expect: [400, 'VALIDATION_ERROR', null], says: /not valid JSON/ },
  { name: 'update: form-encoded body', method: 'POST', path: UPDATE, as: 'admin', raw: 'language=fr', headers: { 'content-type': 'application/x-www-form-urlencoded' }, expect: [400, 'VALIDATION_ERROR', null] },
  { name: 'update: 10 MB body with Content-Length', method: 'POST', path: UPDATE, as: 'admin', raw: TEN_MB_JSON, headers: { 'content-length': String(TEN_MB_JSON.length) }, expect: [413, 'PAYLOAD_TOO_LARGE', null], says: /smaller body/ },
  { name: 'update: 10 MB body chunked', method: 'POST', path: UPDATE, as: 'admin', chunked: TEN_MB, expect: [413, 'PAYLOAD_TOO_LARGE', null] },
  { name: 'update: a query parameter on a valid update (the route takes none)', method: 'POST', path: `${UPDATE}?dry_run=true`, as: 'admin', body: { language: 'fr' }, expect: [422, 'VALIDATION_ERROR', 'dry_run'], says: /takes no query parameters; remove 'dry_run'/ },
  { name: 'update: the fields in the query string instead of the body', method: 'POST', path: `${UPDATE}?email=x%40example.com`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'email'], says: /takes no query parameters; remove 'email'/ },
  { name: 'update: read-only key', method: 'POST', path: UPDATE, as: 'reader', body: { language: 'fr' }, expect: [403, 'FORBIDDEN', null], says: /lacks the 'admin' scope/ },
  { name: 'update: read-write key', method: 'POST', path: UPDATE, as: 'writer', body: { language: 'fr' }, expect: [403, 'FORBIDDEN', null] },
  { name: 'update: read-only key and an invalid body (403 first)', method: 'POST', path: UPDATE, as: 'reader', body: { language: 'de' }, expect: [403, 'FORBIDDEN', null] },
  { name: 'update: site-scoped key', method: 'POST', path: UPDATE, as: 'site', body: { language: 'fr' }, expect: [403, 'FORBIDDEN', null] },
  { name: 'update: no key', method: 'POST', path: UPDATE, body: { language: 'fr' }, expect: [401, 'UNAUTHORIZED', null], header: ['www-authenticate', 'Bearer'] },
  { name: 'update: no key and an invalid body (401 first)', method: 'POST', path: UPDATE, body: { language: 'de' }, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'update: revoked key', method: 'POST', path: UPDATE, as: 'revoked', body: { language: 'fr' }, expect: [401, 'UNAUTHORIZED', null], says: /revoked/ },
  { name: 'update: wrong method GET', method: 'GET', path: UPDATE, as: 'admin', expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'POST'], says: /use POST/ },
  { name: 'update: wrong method PATCH', method: 'PATCH', path: UPDATE, as: 'admin', body: { language: 'fr' }, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'POST'] },
  ...bothWays<Row>({ name: 'update: language "de"', method: 'POST', path: UPDATE, as: 'admin', body: { language: 'de' }, expect: [422, 'VALIDATION_ERROR', 'language'] }),

  // ---- DELETE /account/delete/: nothing but confirm "DELETE" deletes ----
  ...eachValue('delete', 'DELETE', 'confirm', [
    ['"delete"', 'delete'], ['"Delete"', 'Delete'], ['"DELETE " (trailing space)', 'DELETE '], ['" DELETE" (leading space)', ' DELETE'], ['"DELETED"', 'DELETED'], ['"DELET"', 'DELET'],
    ['empty', ''], ['"yes"', 'yes'], ['"true"', 'true'], ['in fullwidth letters', 'ＤＥＬＥＴＥ'], ['with a trailing newline', 'DELETE\n'], ['with a NUL', 'DELETE\u0000'],
    ['of 24 characters', 'DELETE'.repeat(4)], ['of 100,000 characters', HUGE],
    ['as null', null], ['as true', true], ['as 1', 1], ['as an array', ['DELETE']], ['as an object', { value: 'DELETE' }],
  ], /"DELETE"/),
  { name: 'delete: empty body', method: 'DELETE', path: DELETE, as: 'admin', body: {}, expect: [422, 'VALIDATION_ERROR', 'confirm'], says: /'confirm' must be exactly "DELETE"/ },
  { name: 'delete: no body at all', method: 'DELETE', path: DELETE, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'confirm'], says: /"DELETE"/ },
  { name: 'delete: confirm "delete" says to send it in capitals', method: 'DELETE', path: DELETE, as: 'admin', body: { confirm: 'delete' }, expect: [422, 'VALIDATION_ERROR', 'confirm'], says: /irreversible.*confirm: "DELETE".*capitals/ },
  { name: 'delete: confirm "DELETE" beside an unknown field', method: 'DELETE', path: DELETE, as: 'admin', body: { confirm: 'DELETE', reason: 'leaving' }, expect: [422, 'VALIDATION_ERROR', 'reason'], says: /Unknown field 'reason'/ },
  { name: 'delete: confirm "DELETE" beside an account id', method: 'DELETE', path: DELETE, as: 'admin', body: { confirm: 'DELETE', account_id: '{other}' }, expect: [422, 'VALIDATION_ERROR', 'account_id'] },
  { name: 'delete: Confirm capitalised (the missing confirm is named first)', method: 'DELETE', path: DELETE, as: 'admin', body: { Confirm: 'DELETE' }, expect: [422, 'VALIDATION_ERROR', 'confirm'] },
  { name: 'delete: Confirm capitalised beside confirm "DELETE"', method: 'DELETE', path: DELETE, as: 'admin', body: { confirm: 'DELETE', Confirm: 'DELETE' }, expect: [422, 'VALIDATION_ERROR', 'Confirm'] },
  { name: 'delete: duplicate key, the last one wrong', method: 'DELETE', path: DELETE, as: 'admin', raw: '{"confirm":"DELETE","confirm":"delete"}', expect: [422, 'VALIDATION_ERROR', 'confirm'] },
  { name: 'delete: confirm "DELETE" with a query parameter (the route takes none)', method: 'DELETE', path: `${DELETE}?dry_run=true`, as: 'admin', body: { confirm: 'DELETE' }, expect: [422, 'VALIDATION_ERROR', 'dry_run'], says: /takes no query parameters; remove 'dry_run'/ },
  { name: 'delete: confirm in the query string instead of the body', method: 'DELETE', path: `${DELETE}?confirm=DELETE`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'confirm'] },
  { name: 'delete: JSON array body', method: 'DELETE', path: DELETE, as: 'admin', raw: '["DELETE"]', expect: [422, 'VALIDATION_ERROR', null] },
  { name: 'delete: JSON string body "DELETE"', method: 'DELETE', path: DELETE, as: 'admin', raw: '"DELETE"', expect: [422, 'VALIDATION_ERROR', null] },
  { name: 'delete: bare text DELETE', method: 'DELETE', path: DELETE, as: 'admin', raw: 'DELETE', headers: { 'content-type': 'text/plain' }, expect: [400, 'VALIDATION_ERROR', null] },
  { name: 'delete: form-encoded confirm=DELETE', method: 'DELETE', path: DELETE, as: 'admin', raw: 'confirm=DELETE', headers: { 'content-type': 'application/x-www-form-urlencoded' }, expect: [400, 'VALIDATION_ERROR', null] },
  { name: 'delete: truncated JSON', method: 'DELETE', path: DELETE, as: 'admin', raw: '{"confirm":"DELETE"', expect: [400, 'VALIDATION_ERROR', null] },
  { name: 'delete: 10 MB body with Content-Length', method: 'DELETE', path: DELETE, as: 'admin', raw: TEN_MB_JSON, headers: { 'content-length': String(TEN_MB_JSON.length) }, expect: [413, 'PAYLOAD_TOO_LARGE', null] },
  { name: 'delete: 10 MB body chunked', method: 'DELETE', path: DELETE, as: 'admin', chunked: TEN_MB, expect: [413, 'PAYLOAD_TOO_LARGE', null] },
  { name: 'delete: read-only key', method: 'DELETE', path: DELETE, as: 'reader', body: { confirm: 'DELETE' }, expect: [403, 'FORBIDDEN', null], says: /lacks the 'admin' scope/ },
  { name: 'delete: read-write key', method: 'DELETE', path: DELETE, as: 'writer', body: { confirm: 'DELETE' }, expect: [403, 'FORBIDDEN', null] },
  { name: 'delete: site-scoped key', method: 'DELETE', path: DELETE, as: 'site', body: { confirm: 'DELETE' }, expect: [403, 'FORBIDDEN', null] },
  { name: 'delete: no key', method: 'DELETE', path: DELETE, body: { confirm: 'DELETE' }, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'delete: revoked key', method: 'DELETE', path: DELETE, as: 'revoked', body: { confirm: 'DELETE' }, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'delete: wrong method POST', method: 'POST', path: DELETE, as: 'admin', body: { confirm: 'DELETE' }, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'DELETE'], says: /use DELETE/ },
  { name: 'delete: wrong method GET', method: 'GET', path: DELETE, as: 'admin', expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'DELETE'] },
  ...bothWays<Row>({ name: 'delete: confirm "delete"', method: 'DELETE', path: DELETE, as: 'admin', body: { confirm: 'delete' }, expect: [422, 'VALIDATION_ERROR', 'confirm'] }),

  // ---- GET /account/subscriptions/ ----
  { name: 'subscriptions: unknown query parameter status', method: 'GET', path: `${SUBS}?status=active`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'status'], says: /takes no query parameters; remove 'status'/ },
  { name: 'subscriptions: page=2', method: 'GET', path: `${SUBS}?page=2`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'page'] },
  { name: "subscriptions: another account's id in the query", method: 'GET', path: `${SUBS}?account_id={other}`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'account_id'] },
  { name: 'subscriptions: SQL in the query', method: 'GET', path: `${SUBS}?id=${SQL}`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'id'] },
  { name: 'subscriptions: a key with admin but not read', method: 'GET', path: SUBS, as: 'adminOnly', expect: [403, 'FORBIDDEN', null], says: /lacks the 'read' scope/ },
  { name: 'subscriptions: site-scoped key', method: 'GET', path: SUBS, as: 'site', expect: [403, 'FORBIDDEN', null], says: /only on its own site.*account key/ },
  { name: 'subscriptions: no key', method: 'GET', path: SUBS, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'subscriptions: no key and a query parameter (401 first)', method: 'GET', path: `${SUBS}?status=active`, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'subscriptions: revoked key', method: 'GET', path: SUBS, as: 'revoked', expect: [401, 'UNAUTHORIZED', null] },
  { name: 'subscriptions: wrong method POST', method: 'POST', path: SUBS, as: 'admin', body: {}, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'GET'] },
  { name: 'subscriptions: wrong method DELETE', method: 'DELETE', path: SUBS, as: 'admin', expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'GET'] },
  ...bothWays<Row>({ name: 'subscriptions: unknown query parameter', method: 'GET', path: `${SUBS}?status=active`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'status'] }),

  // ---- GET /account/payments/ ----
  { name: 'payments: unknown query parameter kind', method: 'GET', path: `${PAYMENTS}?kind=renewal`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'kind'], says: /takes no query parameters; remove 'kind'/ },
  { name: "payments: another account's id in the query", method: 'GET', path: `${PAYMENTS}?account_id={other}`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'account_id'] },
  { name: 'payments: SQL in the query', method: 'GET', path: `${PAYMENTS}?id=${SQL}`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'id'] },
  { name: 'payments: site-scoped key', method: 'GET', path: PAYMENTS, as: 'site', expect: [403, 'FORBIDDEN', null], says: /only on its own site/ },
  { name: 'payments: no key', method: 'GET', path: PAYMENTS, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'payments: revoked key', method: 'GET', path: PAYMENTS, as: 'revoked', expect: [401, 'UNAUTHORIZED', null] },
  { name: 'payments: wrong method POST', method: 'POST', path: PAYMENTS, as: 'admin', body: {}, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'GET'] },
  ...bothWays<Row>({ name: 'payments: unknown query parameter', method: 'GET', path: `${PAYMENTS}?page=2`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'page'] }),

  // ---- GET /account/billing-portal/ ----
  ...([
    ['bogus', 'bogus'], ['in capitals', 'PAYMENT_METHOD_UPDATE'], ['with hyphens', 'payment-method-update'], ['with a trailing space', 'payment_method_update%20'], ['a space', '%20'],
    ['"null"', 'null'], ['"cancel"', 'cancel'], ['SQL', SQL], ['of 5,000 characters', 'f'.repeat(5000)], ['repeated, one bad', 'payment_method_update&flow=bogus'],
  ] as const).map(([what, value]): Row => ({ name: `billing portal: flow ${what}`, method: 'GET', path: `${PORTAL}?flow=${value}`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'flow'] })),
  { name: 'billing portal: flow=bogus names the one choice and the empty one', method: 'GET', path: `${PORTAL}?flow=bogus`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'flow'], says: /'flow' must be payment_method_update.*empty or left out.*got "bogus"/ },
  { name: 'billing portal: flow[]=x', method: 'GET', path: `${PORTAL}?flow[]=x`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'flow[]'], says: /Unknown query parameter 'flow\[\]'/ },
  { name: 'billing portal: return_url (not accepted)', method: 'GET', path: `${PORTAL}?return_url=https%3A%2F%2Fevil.example%2F`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'return_url'] },
  { name: 'billing portal: a good flow beside an unknown parameter', method: 'GET', path: `${PORTAL}?flow=payment_method_update&account_id={other}`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'account_id'] },
  { name: 'billing portal: read-only key', method: 'GET', path: PORTAL, as: 'reader', expect: [403, 'FORBIDDEN', null], says: /lacks the 'admin' scope/ },
  { name: 'billing portal: read-write key', method: 'GET', path: PORTAL, as: 'writer', expect: [403, 'FORBIDDEN', null] },
  { name: 'billing portal: read-only key and flow=bogus (403 first)', method: 'GET', path: `${PORTAL}?flow=bogus`, as: 'reader', expect: [403, 'FORBIDDEN', null] },
  { name: 'billing portal: site-scoped key', method: 'GET', path: PORTAL, as: 'site', expect: [403, 'FORBIDDEN', null] },
  { name: 'billing portal: no key', method: 'GET', path: PORTAL, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'billing portal: no key and flow=bogus (401 first)', method: 'GET', path: `${PORTAL}?flow=bogus`, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'billing portal: revoked key', method: 'GET', path: PORTAL, as: 'revoked', expect: [401, 'UNAUTHORIZED', null] },
  { name: 'billing portal: wrong method POST', method: 'POST', path: PORTAL, as: 'admin', body: { flow: '' }, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'GET'] },
  ...bothWays<Row>({ name: 'billing portal: flow=bogus', method: 'GET', path: `${PORTAL}?flow=bogus`, as: 'admin', expect: [422, 'VALIDATION_ERROR', 'flow'] }),
]

// ---------------------------------------------------------------------------------------------

const h = inProcess()
const fixture = { keys: {} as Record<FixtureKey, string>, other: '', slug: '' }

beforeAll(async () => {
  const created = await h.call('POST', `${V1}/acp/checkouts/`, { body: { sku: 'svc_starter_monthly' }, headers: { 'x-forwarded-for': '198.19.0.1' } })
  const { id, checkout_secret: secret } = created.json.data
  fixture.slug = `bad-acct-${Math.random().toString(36).slice(2, 8)}`
  await h.call('POST', `${V1}/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: fixture.slug, buyer_email: 'owner@example.com' } })
  const done = await h.call('POST', `${V1}/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
  if (done.status !== 201) throw new Error(`fixture purchase: ${done.status} ${done.text}`)
  await h.services.jobs.drain()
  const admin = done.json.data.api_key as string
  const named = await h.call('POST', `${V1}/account/update/`, { key: admin, body: { first_name: 'Ada', last_name: 'Lovelace', language: 'fr' } })
  if (named.status !== 200) throw new Error(`fixture update: ${named.status} ${named.text}`)
  const create = async (scopes: string[]) => {
    const res = await h.call('POST', `${V1}/keys/create/`, { key: admin, body: { scopes } })
    if (res.status !== 201) throw new Error(`fixture key: ${res.status} ${res.text}`)
    return res.json.data as { api_key: string; key_id: string }
  }
  const [reader, writer, adminOnly, revoked] = [await create(['read']), await create(['read', 'write']), await create(['admin']), await create(['read', 'write', 'admin'])]
  if ((await h.call('POST', `${V1}/keys/${revoked.key_id}/revoke/`, { key: admin })).status !== 200) throw new Error('fixture revoke failed')
  // The claim flow's key, issued as its claim step does (the recording runtime runs no agent).
  const site = h.services.store.sqlite.query('SELECT id, account_id FROM sites WHERE slug = ?').get(fixture.slug) as { id: string; account_id: string }
  const siteKey = h.services.keys.issue(site.account_id, `claimed: ${fixture.slug}`, ['read', 'write'], site.id).api_key
  fixture.other = (await h.register()).accountId
  fixture.keys = { admin, reader: reader.api_key, writer: writer.api_key, adminOnly: adminOnly.api_key, site: siteKey, revoked: revoked.api_key }
})
afterAll(() => h.close())

/** Sends the row as the key it names, `{other}` filled with the other account's id. */
const send = (row: Row, index: number) =>
  sendRow(h, row, index, { key: row.as ? fixture.keys[row.as] : null, fill: (text) => text.replaceAll('{other}', fixture.other) })

/** Everything a refused request must leave alone: accounts, keys, subscriptions, sites, payments, containers. */
function snapshot() {
  const all = (sql: string) => JSON.stringify(h.services.store.sqlite.query(sql).all())
  return {
    accounts: all('SELECT * FROM accounts ORDER BY id'),
    keys: all('SELECT id, account_id, name, scopes, site_id, revoked_at, revoked_reason, replaced_by FROM api_keys ORDER BY id'),
    subscriptions: all('SELECT * FROM subscriptions ORDER BY id'),
    sites: all('SELECT id, slug, status, plan_slug, deletion_scheduled_for, deleted_at FROM sites ORDER BY id'),
    payments: all('SELECT * FROM payments ORDER BY id'),
    domains: all('SELECT * FROM domains ORDER BY id'),
    containerCalls: (h.services.runtime as RecordingRuntime).calls.filter((c) => c.op !== 'inspectSite').length,
  }
}

describe('bad inputs to the account routes get the error envelope and change nothing', () => {
  it.each(rows.map((row, index) => ({ ...row, index })))('$name', async (row) => {
    const before = snapshot()
    const res = await send(row, row.index)
    expectErrorAnswer(h, res, row)
    // Account messages open with a capital (or a quoted value).
    expect(res.json.error.message).toMatch(/^[A-Z'].{10,}\.$/s)
    expect(snapshot()).toEqual(before)
  })

  it('the account survives the whole table: its admin key works and whoami shows its fields', async () => {
    const who = await h.call('GET', `${V1}/auth/whoami/`, { key: fixture.keys.admin })
    expect(who.status).toBe(200)
    expect(who.json.data.user).toMatchObject({ email: 'owner@example.com', language: 'fr', first_name: 'Ada', last_name: 'Lovelace' })
    const subs = await h.call('GET', SUBS, { key: fixture.keys.admin })
    expect(subs.json.data).toHaveLength(1)
    expect(subs.json.data[0]).toMatchObject({ status: 'active', sites: [fixture.slug] })
  })
})

describe('a body sent with a GET is ignored (never read as parameters)', () => {
  it('subscriptions: an account_id in the body does not reach another account', async () => {
    const res = await h.app.handle(new Request(`http://localhost${SUBS}`, {
      method: 'GET', headers: { authorization: `Bearer ${fixture.keys.admin}`, 'content-type': 'application/json' }, body: JSON.stringify({ account_id: fixture.other }),
    }))
    expect(res.status).toBe(200)
    const data = (await res.json()).data as { sites: string[] }[]
    expect(data.map((s) => s.sites)).toEqual([[fixture.slug]])
  })

  it('billing portal: a flow in the body is not the flow, and a body that is not JSON is no error', async () => {
    for (const body of [JSON.stringify({ flow: 'bogus' }), JSON.stringify({ flow: 'payment_method_update' }), 'not json']) {
      const res = await h.app.handle(new Request(`http://localhost${PORTAL}`, { method: 'GET', headers: { authorization: `Bearer ${fixture.keys.admin}`, 'content-type': 'application/json' }, body }))
      expect(res.status, body).toBe(200)
      expect((await res.json()).data.flow).toBe('')
    }
  })
})
