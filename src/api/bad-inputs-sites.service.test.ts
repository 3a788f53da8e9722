/**
 * Bad inputs against the site routes (create, get, scale, delete, restore) and the files API,
 * table-driven, on real sites (real SQLite, real Docker); plus what a site-scoped key (claim flow)
 * may not do. Each row is one request and the error it must get; checkRow (helpers/bad-inputs.ts)
 * also checks the envelope, that nothing leaks, and that nothing changed. The logs, deploy,
 * metrics, snapshot, SSH, module and claim routes are in bad-inputs-site-features.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bothWays, checkRow, SQL, TEN_MB, TEN_MB_JSON, UNKNOWN_UUID, V1, type Row } from '../../test/helpers/bad-inputs'
import { inProcess } from '../../test/helpers/in-process'
import { siteFixture, type SiteFixture } from '../../test/helpers/site-fixture'

const S = `${V1}/sites/{shared}`
const F = `${S}/files`
const LONG = 'a'.repeat(200)

/** Every site route but the admin ones, as [method, path after /sites/{slug}/, body]. */
const SITE_ROUTES: [string, string, unknown?][] = [
  ['GET', ''], ['GET', 'files/?path=public'], ['GET', 'files/read/?path=public/index.html'],
  ['POST', 'files/write/', { path: 'x.txt', content: 'x' }], ['POST', 'files/upload/', { path: 'x.bin', content_b64: 'AA==' }],
  ['POST', 'files/mkdir/', { path: 'x' }], ['POST', 'files/delete/', { path: 'public/index.html' }],
  ['GET', 'logs/'], ['GET', 'metrics/'], ['POST', 'deploy/'], ['GET', 'deployments/'], ['GET', 'deployments/{deployment}/'],
  ['POST', 'deployments/{deployment}/rollback/'],
  ['POST', 'snapshot/'], ['GET', 'snapshots/'], ['GET', 'snapshots/{snapshot}/'], ['POST', 'snapshots/{snapshot}/restore/'], ['DELETE', 'snapshots/{snapshot}/'],
  ['GET', 'backups/'], ['GET', 'ssh/'], ['GET', 'ssh/keys/'], ['POST', 'ssh/keys/', { public_key: 'ssh-ed25519 AAAA' }], ['DELETE', 'ssh/keys/{sshKey}/'],
  ['POST', 'ssh/git/'],
  ['GET', 'modules/'], ['POST', 'modules/seo/toggle/'], ['POST', 'settings/', { hsts_max_age: 60 }],
]

const siteKeyRows: Row[] = [
  // A site-scoped key works only on /sites/{its slug}/...: another site, of its account or not, is 404.
  ...SITE_ROUTES.flatMap(([method, rest, body]) => ['vps', 'foreign'].map((site): Row => ({
    name: `site key: ${method} ${rest || 'site'} of ${site === 'vps' ? 'another site of its account' : "another account's site"}`,
    method, path: `${V1}/sites/{${site}}/${rest}`, as: 'site', body, expect: [404, 'NOT_FOUND', 'tenant_slug'], says: /this key works only on its own site, 'bad-/,
  }))),
  // Account and key routes are 403; so are the admin routes of its own site (read and write only).
  { name: 'site key: list sites', method: 'GET', path: `${V1}/sites/`, as: 'site', expect: [403, 'FORBIDDEN', null], says: /works only on its own site, 'bad-.*account key/ },
  { name: 'site key: whoami', method: 'GET', path: `${V1}/auth/whoami/`, as: 'site', expect: [403, 'FORBIDDEN', null] },
  { name: 'site key: list keys', method: 'GET', path: `${V1}/keys/`, as: 'site', expect: [403, 'FORBIDDEN', null] },
  { name: 'site key: create a key', method: 'POST', path: `${V1}/keys/create/`, as: 'site', body: { scopes: ['read'] }, expect: [403, 'FORBIDDEN', null] },
  { name: "site key: revoke the owner's key", method: 'POST', path: `${V1}/keys/{ownKeyId}/revoke/`, as: 'site', expect: [403, 'FORBIDDEN', null] },
  { name: "site key: rotate the owner's key", method: 'POST', path: `${V1}/keys/{ownKeyId}/rotate/`, as: 'site', expect: [403, 'FORBIDDEN', null] },
  { name: 'site key: create a site', method: 'POST', path: `${V1}/sites/create/`, as: 'site', body: { slug: 'by-site-key' }, expect: [403, 'FORBIDDEN', null] },
  { name: 'site key: buy a site for the account (checkout with the key)', method: 'POST', path: `${V1}/acp/checkouts/`, as: 'site', body: { sku: 'svc_starter_monthly' }, expect: [403, 'FORBIDDEN', null], says: /'admin' scope/ },
  { name: 'site key: scale its own site', method: 'POST', path: `${S}/scale/`, as: 'site', body: { new_plan: 'business' }, expect: [403, 'FORBIDDEN', null], says: /'admin' scope/ },
  { name: 'site key: delete its own site', method: 'DELETE', path: `${S}/delete/`, as: 'site', expect: [403, 'FORBIDDEN', null] },
  { name: 'site key: restore its own site', method: 'POST', path: `${S}/restore/`, as: 'site', expect: [403, 'FORBIDDEN', null] },
  { name: 'read-only key: buy a site for the account', method: 'POST', path: `${V1}/acp/checkouts/`, as: 'reader', body: { sku: 'svc_starter_monthly' }, expect: [403, 'FORBIDDEN', null], says: /'admin' scope/ },
  { name: 'read-write key: buy a site for the account', method: 'POST', path: `${V1}/acp/checkouts/`, as: 'writer', body: { sku: 'svc_starter_monthly' }, expect: [403, 'FORBIDDEN', null] },
]

const siteRows: Row[] = [
  // ---- GET /sites/ and GET /sites/{tenant_slug}/: hostile slugs ----
  { name: 'sites: no key', method: 'GET', path: `${V1}/sites/`, as: null, expect: [401, 'UNAUTHORIZED', null] },
  // No site can have such a slug: unknown, so 404 before any validation (access.ts's rule).
  { name: 'site: slug of 200 characters', method: 'GET', path: `${V1}/sites/${LONG}/`, expect: [404, 'NOT_FOUND', 'tenant_slug'], says: /GET \/sites\// },
  { name: 'site: slug of 101 characters', method: 'GET', path: `${V1}/sites/${'a'.repeat(101)}/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'site: slug in uppercase', method: 'GET', path: `${V1}/sites/BAD-SITE/`, expect: [404, 'NOT_FOUND', 'tenant_slug'], says: /GET \/sites\/ lists yours/ },
  { name: "site: another account's site (404, never 403)", method: 'GET', path: `${V1}/sites/{foreign}/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'site: ".." (the URL parser resolves it away)', method: 'GET', path: `${V1}/sites/../`, expect: [404, 'NOT_FOUND', null], says: /openapi\.json/ },
  { name: 'site: "%2e%2e" (resolved like "..")', method: 'GET', path: `${V1}/sites/%2e%2e/`, expect: [404, 'NOT_FOUND', null] },
  { name: 'site: "..%2F..%2Fetc"', method: 'GET', path: `${V1}/sites/..%2F..%2Fetc/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'site: "%252e%252e" (double-encoded)', method: 'GET', path: `${V1}/sites/%252e%252e/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'site: broken percent-encoding', method: 'GET', path: `${V1}/sites/%ZZ/`, expect: [422, 'VALIDATION_ERROR', 'tenant_slug'], says: /encodeURIComponent/ },
  { name: 'site: NUL in the slug', method: 'GET', path: `${V1}/sites/bad%00site/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'site: SQL injection', method: 'GET', path: `${V1}/sites/${SQL}/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'site: no key', method: 'GET', path: `${S}/`, as: null, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'site: DELETE (delete is DELETE .../delete/)', method: 'DELETE', path: `${S}/`, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'GET'] },
  { name: 'site: unknown sub-route', method: 'GET', path: `${S}/nope/`, expect: [404, 'NOT_FOUND', null] },
  ...bothWays({ name: "site: another account's site", method: 'GET', path: `${V1}/sites/{foreign}/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] }),

  // ---- POST /sites/create/ ----
  { name: 'create: slug as a number', method: 'POST', path: `${V1}/sites/create/`, body: { slug: 5 }, expect: [422, 'VALIDATION_ERROR', 'slug'], says: /'slug'.*lowercase letters/ },
  { name: 'create: slug missing', method: 'POST', path: `${V1}/sites/create/`, body: {}, expect: [422, 'VALIDATION_ERROR', 'slug'] },
  { name: 'create: slug empty', method: 'POST', path: `${V1}/sites/create/`, body: { slug: '' }, expect: [422, 'VALIDATION_ERROR', 'slug'] },
  { name: 'create: slug of 200 characters', method: 'POST', path: `${V1}/sites/create/`, body: { slug: LONG }, expect: [422, 'VALIDATION_ERROR', 'slug'] },
  { name: 'create: slug in uppercase', method: 'POST', path: `${V1}/sites/create/`, body: { slug: 'MY-SITE' }, expect: [422, 'VALIDATION_ERROR', 'slug'] },
  { name: 'create: slug ".."', method: 'POST', path: `${V1}/sites/create/`, body: { slug: '..' }, expect: [422, 'VALIDATION_ERROR', 'slug'] },
  { name: 'create: slug reserved', method: 'POST', path: `${V1}/sites/create/`, body: { slug: 'www' }, expect: [422, 'VALIDATION_ERROR', 'slug'], says: /reserved; choose another/ },
  { name: "create: slug of another account's site", method: 'POST', path: `${V1}/sites/create/`, body: { slug: '{foreign}' }, expect: [422, 'VALIDATION_ERROR', 'slug'], says: /taken; choose another/ },
  { name: 'create: subscription_id not a UUID', method: 'POST', path: `${V1}/sites/create/`, body: { slug: 'new-site', subscription_id: 'sub_1' }, expect: [422, 'VALIDATION_ERROR', 'subscription_id'] },
  { name: 'create: subscription_id empty', method: 'POST', path: `${V1}/sites/create/`, body: { slug: 'new-site', subscription_id: '' }, expect: [422, 'VALIDATION_ERROR', 'subscription_id'] },
  { name: 'create: unknown subscription_id', method: 'POST', path: `${V1}/sites/create/`, body: { slug: 'new-site', subscription_id: UNKNOWN_UUID }, expect: [422, 'VALIDATION_ERROR', 'subscription_id'], says: /GET \/account\/subscriptions\// },
  { name: "create: another account's subscription", method: 'POST', path: `${V1}/sites/create/`, body: { slug: 'new-site', subscription_id: '{foreignSub}' }, expect: [422, 'VALIDATION_ERROR', 'subscription_id'], says: /No subscription .* in your account/ },
  { name: 'create: no subscription with room', method: 'POST', path: `${V1}/sites/create/`, body: { slug: 'new-site' }, expect: [403, 'FORBIDDEN', null], says: /buy an agency plan/ },
  { name: 'create: unknown field', method: 'POST', path: `${V1}/sites/create/`, body: { slug: 'new-site', plan: 'agency' }, expect: [422, 'VALIDATION_ERROR', 'plan'], says: /Unknown field 'plan'/ },
  { name: 'create: __proto__ field', method: 'POST', path: `${V1}/sites/create/`, raw: '{"slug":"new-site","__proto__":{"admin":true}}', expect: [422, 'VALIDATION_ERROR', '__proto__'] },
  { name: 'create: JSON array body', method: 'POST', path: `${V1}/sites/create/`, raw: '[{"slug":"new-site"}]', expect: [422, 'VALIDATION_ERROR', null], says: /JSON object with the fields slug, subscription_id/ },
  { name: 'create: truncated JSON', method: 'POST', path: `${V1}/sites/create/`, raw: '{"slug":"new-site"', expect: [400, 'VALIDATION_ERROR', null], says: /not valid JSON/ },
  { name: 'create: form-encoded body', method: 'POST', path: `${V1}/sites/create/`, raw: 'slug=new-site', headers: { 'content-type': 'application/x-www-form-urlencoded' }, expect: [400, 'VALIDATION_ERROR', null] },
  { name: 'create: 10 MB body', method: 'POST', path: `${V1}/sites/create/`, raw: TEN_MB_JSON, headers: { 'content-length': String(TEN_MB_JSON.length) }, expect: [413, 'PAYLOAD_TOO_LARGE', null], says: /smaller body/ },
  { name: 'create: 10 MB body chunked', method: 'POST', path: `${V1}/sites/create/`, chunked: TEN_MB, expect: [413, 'PAYLOAD_TOO_LARGE', null] },
  { name: 'create: read-write key (admin needed)', method: 'POST', path: `${V1}/sites/create/`, as: 'writer', body: { slug: 'new-site' }, expect: [403, 'FORBIDDEN', null], says: /'admin' scope/ },
  { name: 'create: no key', method: 'POST', path: `${V1}/sites/create/`, as: null, body: { slug: 'new-site' }, expect: [401, 'UNAUTHORIZED', null] },
  ...bothWays({ name: 'create: slug reserved', method: 'POST', path: `${V1}/sites/create/`, body: { slug: 'www' }, expect: [422, 'VALIDATION_ERROR', 'slug'] }),

  // ---- POST /sites/{slug}/scale/ ----
  { name: 'scale: new_plan missing', method: 'POST', path: `${S}/scale/`, body: {}, expect: [422, 'VALIDATION_ERROR', 'new_plan'], says: /'new_plan' is required/ },
  { name: 'scale: new_plan as a number', method: 'POST', path: `${S}/scale/`, body: { new_plan: 2 }, expect: [422, 'VALIDATION_ERROR', 'new_plan'] },
  { name: 'scale: new_plan as an array', method: 'POST', path: `${S}/scale/`, body: { new_plan: ['business'] }, expect: [422, 'VALIDATION_ERROR', 'new_plan'] },
  { name: 'scale: new_plan as an object', method: 'POST', path: `${S}/scale/`, body: { new_plan: { slug: 'business' } }, expect: [422, 'VALIDATION_ERROR', 'new_plan'] },
  { name: 'scale: new_plan empty', method: 'POST', path: `${S}/scale/`, body: { new_plan: '' }, expect: [422, 'VALIDATION_ERROR', 'new_plan'] },
  { name: 'scale: new_plan of 200 characters', method: 'POST', path: `${S}/scale/`, body: { new_plan: LONG }, expect: [422, 'VALIDATION_ERROR', 'new_plan'] },
  { name: 'scale: unknown plan', method: 'POST', path: `${S}/scale/`, body: { new_plan: 'platinum' }, expect: [422, 'VALIDATION_ERROR', 'new_plan'], says: /GET \/plans\// },
  { name: 'scale: plan in uppercase', method: 'POST', path: `${S}/scale/`, body: { new_plan: 'BUSINESS' }, expect: [422, 'VALIDATION_ERROR', 'new_plan'] },
  { name: 'scale: plan "__proto__"', method: 'POST', path: `${S}/scale/`, body: { new_plan: '__proto__' }, expect: [422, 'VALIDATION_ERROR', 'new_plan'] },
  { name: 'scale: deprecated plan', method: 'POST', path: `${S}/scale/`, body: { new_plan: 'legacy-basic' }, expect: [422, 'VALIDATION_ERROR', 'new_plan'], says: /deprecated.*pick one from GET \/plans\// },
  { name: 'scale: unknown field', method: 'POST', path: `${S}/scale/`, body: { new_plan: 'business', force: true }, expect: [422, 'VALIDATION_ERROR', 'force'] },
  { name: 'scale: JSON array body', method: 'POST', path: `${S}/scale/`, raw: '["business"]', expect: [422, 'VALIDATION_ERROR', null], says: /fields new_plan/ },
  { name: 'scale: bare text body', method: 'POST', path: `${S}/scale/`, raw: 'business', expect: [400, 'VALIDATION_ERROR', null] },
  { name: 'scale: 10 MB body', method: 'POST', path: `${S}/scale/`, raw: TEN_MB_JSON, headers: { 'content-length': String(TEN_MB_JSON.length) }, expect: [413, 'PAYLOAD_TOO_LARGE', null] },
  { name: 'scale: a site pending deletion', method: 'POST', path: `${V1}/sites/{doomed}/scale/`, body: { new_plan: 'business' }, expect: [409, 'CONFLICT', null], says: /restore\/ first/ },
  { name: "scale: another account's site", method: 'POST', path: `${V1}/sites/{foreign}/scale/`, body: { new_plan: 'business' }, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: "scale: another account's site and an unknown plan (404 first)", method: 'POST', path: `${V1}/sites/{foreign}/scale/`, body: { new_plan: 'platinum' }, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'scale: slug of 200 characters', method: 'POST', path: `${V1}/sites/${LONG}/scale/`, body: { new_plan: 'business' }, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'scale: read-write key', method: 'POST', path: `${S}/scale/`, as: 'writer', body: { new_plan: 'business' }, expect: [403, 'FORBIDDEN', null] },
  { name: 'scale: no key', method: 'POST', path: `${S}/scale/`, as: null, body: { new_plan: 'business' }, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'scale: GET', method: 'GET', path: `${S}/scale/`, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'POST'] },
  ...bothWays({ name: 'scale: unknown plan', method: 'POST', path: `${S}/scale/`, body: { new_plan: 'platinum' }, expect: [422, 'VALIDATION_ERROR', 'new_plan'] }),

  // ---- POST /sites/{slug}/settings/ (hsts_max_age) ----
  { name: 'settings: hsts_max_age missing', method: 'POST', path: `${S}/settings/`, body: {}, expect: [422, 'VALIDATION_ERROR', 'hsts_max_age'], says: /'hsts_max_age' is required/ },
  { name: 'settings: hsts_max_age as a string', method: 'POST', path: `${S}/settings/`, body: { hsts_max_age: '3600' }, expect: [422, 'VALIDATION_ERROR', 'hsts_max_age'] },
  { name: 'settings: hsts_max_age as a boolean', method: 'POST', path: `${S}/settings/`, body: { hsts_max_age: true }, expect: [422, 'VALIDATION_ERROR', 'hsts_max_age'] },
  { name: 'settings: hsts_max_age negative', method: 'POST', path: `${S}/settings/`, body: { hsts_max_age: -1 }, expect: [422, 'VALIDATION_ERROR', 'hsts_max_age'] },
  { name: 'settings: hsts_max_age above two years', method: 'POST', path: `${S}/settings/`, body: { hsts_max_age: 63072001 }, expect: [422, 'VALIDATION_ERROR', 'hsts_max_age'] },
  { name: 'settings: hsts_max_age fractional', method: 'POST', path: `${S}/settings/`, body: { hsts_max_age: 60.5 }, expect: [422, 'VALIDATION_ERROR', 'hsts_max_age'] },
  { name: 'settings: unknown field', method: 'POST', path: `${S}/settings/`, body: { hsts_max_age: 60, include_subdomains: true }, expect: [422, 'VALIDATION_ERROR', 'include_subdomains'] },
  { name: "settings: another account's site", method: 'POST', path: `${V1}/sites/{foreign}/settings/`, body: { hsts_max_age: 60 }, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'settings: read-only key', method: 'POST', path: `${S}/settings/`, as: 'reader', body: { hsts_max_age: 60 }, expect: [403, 'FORBIDDEN', null] },
  { name: 'settings: no key', method: 'POST', path: `${S}/settings/`, as: null, body: { hsts_max_age: 60 }, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'settings: GET', method: 'GET', path: `${S}/settings/`, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'POST'] },

  // ---- DELETE /sites/{slug}/delete/: a body is refused rather than ignored ----
  { name: 'delete: a body with a field (dry_run)', method: 'DELETE', path: `${S}/delete/`, body: { dry_run: true }, expect: [422, 'VALIDATION_ERROR', 'dry_run'], says: /takes no body; remove the field 'dry_run'/ },
  { name: 'delete: a query parameter (dry_run)', method: 'DELETE', path: `${S}/delete/?dry_run=true`, expect: [422, 'VALIDATION_ERROR', 'dry_run'], says: /takes no query parameters; remove 'dry_run'/ },
  { name: 'scale: a query parameter', method: 'POST', path: `${S}/scale/?force=1`, body: { new_plan: 'business' }, expect: [422, 'VALIDATION_ERROR', 'force'], says: /takes no query parameters/ },
  { name: 'delete: a body with confirm', method: 'DELETE', path: `${S}/delete/`, body: { confirm: 'no' }, expect: [422, 'VALIDATION_ERROR', 'confirm'] },
  { name: 'delete: JSON array body', method: 'DELETE', path: `${S}/delete/`, raw: '[]', expect: [422, 'VALIDATION_ERROR', null], says: /takes no body/ },
  { name: 'delete: JSON string body', method: 'DELETE', path: `${S}/delete/`, raw: '"now"', expect: [422, 'VALIDATION_ERROR', null] },
  { name: 'delete: truncated JSON', method: 'DELETE', path: `${S}/delete/`, raw: '{bad', expect: [400, 'VALIDATION_ERROR', null] },
  { name: 'delete: 10 MB body', method: 'DELETE', path: `${S}/delete/`, raw: TEN_MB_JSON, headers: { 'content-length': String(TEN_MB_JSON.length) }, expect: [413, 'PAYLOAD_TOO_LARGE', null] },
  { name: 'delete: already pending deletion', method: 'DELETE', path: `${V1}/sites/{doomed}/delete/`, expect: [409, 'CONFLICT', null], says: /restore\/ to keep it/ },
  { name: "delete: another account's site", method: 'DELETE', path: `${V1}/sites/{foreign}/delete/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'delete: slug in uppercase', method: 'DELETE', path: `${V1}/sites/BAD-SITE/delete/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'delete: slug "..%2F"', method: 'DELETE', path: `${V1}/sites/..%2F/delete/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'delete: slug of 200 characters', method: 'DELETE', path: `${V1}/sites/${LONG}/delete/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'delete: read-write key', method: 'DELETE', path: `${S}/delete/`, as: 'writer', expect: [403, 'FORBIDDEN', null] },
  { name: 'delete: no key', method: 'DELETE', path: `${S}/delete/`, as: null, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'delete: POST', method: 'POST', path: `${S}/delete/`, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'DELETE'] },
  ...bothWays({ name: 'delete: a body with a field', method: 'DELETE', path: `${S}/delete/`, body: { dry_run: true }, expect: [422, 'VALIDATION_ERROR', 'dry_run'] }),

  // ---- POST /sites/{slug}/restore/ ----
  { name: 'restore: a site not pending deletion', method: 'POST', path: `${S}/restore/`, expect: [409, 'CONFLICT', null], says: /nothing to restore/ },
  { name: 'restore: a body with a field', method: 'POST', path: `${V1}/sites/{doomed}/restore/`, body: { at: 'now' }, expect: [422, 'VALIDATION_ERROR', 'at'] },
  { name: "restore: another account's site", method: 'POST', path: `${V1}/sites/{foreign}/restore/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'restore: read-write key', method: 'POST', path: `${V1}/sites/{doomed}/restore/`, as: 'writer', expect: [403, 'FORBIDDEN', null] },
  ...bothWays({ name: 'restore: a site not pending deletion', method: 'POST', path: `${S}/restore/`, expect: [409, 'CONFLICT', null] }),
]

const fileRows: Row[] = [
  // ---- GET files/ ----
  { name: 'list: path ".."', method: 'GET', path: `${F}/?path=..`, expect: [422, 'VALIDATION_ERROR', 'path'], says: /'\.\.'/ },
  { name: 'list: path "public/../.."', method: 'GET', path: `${F}/?path=public/../..`, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'list: path absolute', method: 'GET', path: `${F}/?path=/etc`, expect: [422, 'VALIDATION_ERROR', 'path'], says: /relative to the site's home/ },
  { name: 'list: path "%2e%2e" sent encoded twice', method: 'GET', path: `${F}/?path=%252e%252e`, expect: [422, 'VALIDATION_ERROR', 'path'], says: /send the characters themselves/ },
  { name: 'list: path with a NUL byte', method: 'GET', path: `${F}/?path=public%00`, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'list: path with backslashes', method: 'GET', path: `${F}/?path=public%5C..%5C..`, expect: [422, 'VALIDATION_ERROR', 'path'], says: /separate folders with \// },
  { name: 'list: path with a look-alike of "."', method: 'GET', path: `${F}/?path=${encodeURIComponent('\u2024\u2024')}`, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'list: path of 5,000 characters', method: 'GET', path: `${F}/?path=${'d/'.repeat(2500)}`, expect: [422, 'VALIDATION_ERROR', 'path'], says: /at most 4096 bytes/ },
  { name: 'list: a symbolic link out of the home', method: 'GET', path: `${F}/?path=public/evil-dir`, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'list: a folder that does not exist', method: 'GET', path: `${F}/?path=nope`, expect: [404, 'NOT_FOUND', 'path'], says: /lists a folder/ },
  { name: 'list: unknown query parameter', method: 'GET', path: `${F}/?pth=public`, expect: [422, 'VALIDATION_ERROR', 'pth'], says: /Unknown query parameter 'pth'/ },
  { name: 'list: path as an array (path[])', method: 'GET', path: `${F}/?path[]=public`, expect: [422, 'VALIDATION_ERROR', 'path[]'] },
  { name: 'list: a parameter with no name', method: 'GET', path: `${F}/?=public`, expect: [422, 'VALIDATION_ERROR', null], says: /name=value/ },
  { name: "list: another account's site", method: 'GET', path: `${V1}/sites/{foreign}/files/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'list: slug "%2e%2e" (resolved like "..")', method: 'GET', path: `${V1}/sites/%2e%2e/files/`, expect: [404, 'NOT_FOUND', null] },
  { name: 'list: slug of 200 characters', method: 'GET', path: `${V1}/sites/${LONG}/files/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'list: no key', method: 'GET', path: `${F}/`, as: null, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'list: PUT', method: 'PUT', path: `${F}/`, body: {}, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'GET'] },
  ...bothWays({ name: 'list: path ".."', method: 'GET', path: `${F}/?path=..`, expect: [422, 'VALIDATION_ERROR', 'path'] }),

  // ---- GET files/read/ ----
  { name: 'read: path missing', method: 'GET', path: `${F}/read/`, expect: [422, 'VALIDATION_ERROR', 'path'], says: /'path' is required/ },
  { name: 'read: path empty (the home)', method: 'GET', path: `${F}/read/?path=`, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'read: a folder', method: 'GET', path: `${F}/read/?path=public`, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'read: /etc/passwd', method: 'GET', path: `${F}/read/?path=/etc/passwd`, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'read: ../../../etc/passwd', method: 'GET', path: `${F}/read/?path=../../../etc/passwd`, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'read: a symbolic link to /etc/passwd', method: 'GET', path: `${F}/read/?path=public/evil`, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'read: through a symbolic link to /tmp', method: 'GET', path: `${F}/read/?path=public/evil-dir/x`, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'read: a file that does not exist', method: 'GET', path: `${F}/read/?path=public/nope.html`, expect: [404, 'NOT_FOUND', 'path'] },
  { name: 'read: a binary file', method: 'GET', path: `${F}/read/?path=public/bin.dat`, expect: [415, 'UNSUPPORTED_MEDIA_TYPE', 'path'] },
  { name: 'read: a file over 512 KB', method: 'GET', path: `${F}/read/?path=public/big.txt`, expect: [413, 'PAYLOAD_TOO_LARGE', 'path'] },
  { name: 'read: unknown query parameter', method: 'GET', path: `${F}/read/?path=public/index.html&offset=10`, expect: [422, 'VALIDATION_ERROR', 'offset'] },
  { name: "read: another account's site", method: 'GET', path: `${V1}/sites/{foreign}/files/read/?path=public/index.html`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  ...bothWays({ name: 'read: path missing', method: 'GET', path: `${F}/read/`, expect: [422, 'VALIDATION_ERROR', 'path'] }),

  // ---- POST files/write/ ----
  { name: 'write: content missing', method: 'POST', path: `${F}/write/`, body: { path: 'a.txt' }, expect: [422, 'VALIDATION_ERROR', 'content'], says: /'content' is required/ },
  { name: 'write: path missing', method: 'POST', path: `${F}/write/`, body: { content: 'x' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'write: content as a number', method: 'POST', path: `${F}/write/`, body: { path: 'a.txt', content: 5 }, expect: [422, 'VALIDATION_ERROR', 'content'] },
  { name: 'write: content as an object', method: 'POST', path: `${F}/write/`, body: { path: 'a.txt', content: { text: 'x' } }, expect: [422, 'VALIDATION_ERROR', 'content'] },
  { name: 'write: path as an array', method: 'POST', path: `${F}/write/`, body: { path: ['a.txt'], content: 'x' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'write: path empty (the home)', method: 'POST', path: `${F}/write/`, body: { path: '', content: 'x' }, expect: [422, 'VALIDATION_ERROR', 'path'], says: /name a file/ },
  { name: 'write: path ".."', method: 'POST', path: `${F}/write/`, body: { path: '../x.txt', content: 'x' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'write: ".." written as \\u002e', method: 'POST', path: `${F}/write/`, raw: '{"path":"\\u002e\\u002e/x.txt","content":"x"}', expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'write: path given twice, the second escaping', method: 'POST', path: `${F}/write/`, raw: '{"path":"a.txt","path":"../x.txt","content":"x"}', expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'write: path absolute', method: 'POST', path: `${F}/write/`, body: { path: '/etc/cron.d/x', content: 'x' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'write: path with a NUL byte', method: 'POST', path: `${F}/write/`, body: { path: 'a.txt\u0000.php', content: 'x' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'write: a name of 300 characters', method: 'POST', path: `${F}/write/`, body: { path: 'a'.repeat(300), content: 'x' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'write: through a symbolic link to /tmp', method: 'POST', path: `${F}/write/`, body: { path: 'public/evil-dir/pwned', content: 'x' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'write: onto a symbolic link to /etc/passwd', method: 'POST', path: `${F}/write/`, body: { path: 'public/evil', content: 'x' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'write: onto a folder', method: 'POST', path: `${F}/write/`, body: { path: 'public', content: 'x' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'write: below a file', method: 'POST', path: `${F}/write/`, body: { path: 'public/index.html/x', content: 'x' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'write: content over 1 MiB', method: 'POST', path: `${F}/write/`, body: { path: 'a.txt', content: 'x'.repeat(1_048_577) }, expect: [413, 'PAYLOAD_TOO_LARGE', 'content'], says: /files\/upload\// },
  { name: 'write: 10 MB body', method: 'POST', path: `${F}/write/`, raw: TEN_MB_JSON, headers: { 'content-length': String(TEN_MB_JSON.length) }, expect: [413, 'PAYLOAD_TOO_LARGE', 'content'] },
  { name: 'write: 10 MB body chunked', method: 'POST', path: `${F}/write/`, chunked: TEN_MB, expect: [413, 'PAYLOAD_TOO_LARGE', 'content'] },
  { name: 'write: unknown field', method: 'POST', path: `${F}/write/`, body: { path: 'a.txt', content: 'x', mode: '4755' }, expect: [422, 'VALIDATION_ERROR', 'mode'] },
  { name: 'write: JSON array body', method: 'POST', path: `${F}/write/`, raw: '[{"path":"a.txt","content":"x"}]', expect: [422, 'VALIDATION_ERROR', null], says: /fields path, content/ },
  { name: 'write: JSON null body', method: 'POST', path: `${F}/write/`, raw: 'null', expect: [422, 'VALIDATION_ERROR', null] },
  { name: 'write: form-encoded body', method: 'POST', path: `${F}/write/`, raw: 'path=a.txt&content=x', headers: { 'content-type': 'application/x-www-form-urlencoded' }, expect: [400, 'VALIDATION_ERROR', null] },
  { name: 'write: a site pending deletion', method: 'POST', path: `${V1}/sites/{doomed}/files/write/`, body: { path: 'a.txt', content: 'x' }, expect: [409, 'CONFLICT', null] },
  { name: "write: another account's site", method: 'POST', path: `${V1}/sites/{foreign}/files/write/`, body: { path: 'a.txt', content: 'x' }, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'write: read-only key', method: 'POST', path: `${F}/write/`, as: 'reader', body: { path: 'a.txt', content: 'x' }, expect: [403, 'FORBIDDEN', null], says: /'write' scope/ },
  ...bothWays({ name: 'write: path ".."', method: 'POST', path: `${F}/write/`, body: { path: '../x.txt', content: 'x' }, expect: [422, 'VALIDATION_ERROR', 'path'] }),

  // ---- POST files/upload/ ----
  { name: 'upload: content_b64 not base64', method: 'POST', path: `${F}/upload/`, body: { path: 'a.bin', content_b64: '!!!!' }, expect: [422, 'VALIDATION_ERROR', 'content_b64'], says: /standard base64/ },
  { name: 'upload: content_b64 of a bad length', method: 'POST', path: `${F}/upload/`, body: { path: 'a.bin', content_b64: 'QUFBQ' }, expect: [422, 'VALIDATION_ERROR', 'content_b64'] },
  { name: 'upload: content_b64 with line breaks', method: 'POST', path: `${F}/upload/`, body: { path: 'a.bin', content_b64: 'QUFB\nQUFB' }, expect: [422, 'VALIDATION_ERROR', 'content_b64'] },
  { name: 'upload: content_b64 as a number', method: 'POST', path: `${F}/upload/`, body: { path: 'a.bin', content_b64: 1234 }, expect: [422, 'VALIDATION_ERROR', 'content_b64'] },
  { name: 'upload: content_b64 missing', method: 'POST', path: `${F}/upload/`, body: { path: 'a.bin' }, expect: [422, 'VALIDATION_ERROR', 'content_b64'] },
  { name: 'upload: content instead of content_b64', method: 'POST', path: `${F}/upload/`, body: { path: 'a.bin', content_b64: 'QUFB', content: 'AAA' }, expect: [422, 'VALIDATION_ERROR', 'content'] },
  { name: 'upload: path ".."', method: 'POST', path: `${F}/upload/`, body: { path: '../a.bin', content_b64: 'QUFB' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'upload: path empty', method: 'POST', path: `${F}/upload/`, body: { path: '', content_b64: 'QUFB' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'upload: more than 10 MiB once decoded', method: 'POST', path: `${F}/upload/`, body: { path: 'a.bin', content_b64: 'A'.repeat(13_981_016) }, expect: [413, 'PAYLOAD_TOO_LARGE', 'content_b64'], says: /at most 10485760 bytes/ },
  { name: 'upload: Content-Length claiming 20 MB', method: 'POST', path: `${F}/upload/`, raw: '{}', headers: { 'content-length': String(2 * TEN_MB) }, expect: [413, 'PAYLOAD_TOO_LARGE', 'content_b64'] },
  { name: 'upload: 20 MB body chunked', method: 'POST', path: `${F}/upload/`, chunked: 2 * TEN_MB, expect: [413, 'PAYLOAD_TOO_LARGE', 'content_b64'] },
  { name: 'upload: a site pending deletion', method: 'POST', path: `${V1}/sites/{doomed}/files/upload/`, body: { path: 'a.bin', content_b64: 'QUFB' }, expect: [409, 'CONFLICT', null] },
  ...bothWays({ name: 'upload: content_b64 not base64', method: 'POST', path: `${F}/upload/`, body: { path: 'a.bin', content_b64: '!!!!' }, expect: [422, 'VALIDATION_ERROR', 'content_b64'] }),

  // ---- POST files/mkdir/ ----
  { name: 'mkdir: path missing', method: 'POST', path: `${F}/mkdir/`, body: {}, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'mkdir: path empty (the home)', method: 'POST', path: `${F}/mkdir/`, body: { path: '' }, expect: [422, 'VALIDATION_ERROR', 'path'], says: /name the folder to create/ },
  { name: 'mkdir: path "."', method: 'POST', path: `${F}/mkdir/`, body: { path: '.' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'mkdir: path ".."', method: 'POST', path: `${F}/mkdir/`, body: { path: '../x' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'mkdir: an existing file', method: 'POST', path: `${F}/mkdir/`, body: { path: 'public/index.html' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'mkdir: through a symbolic link to /tmp', method: 'POST', path: `${F}/mkdir/`, body: { path: 'public/evil-dir/x' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'mkdir: path as a boolean', method: 'POST', path: `${F}/mkdir/`, body: { path: true }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'mkdir: unknown field', method: 'POST', path: `${F}/mkdir/`, body: { path: 'x', recursive: true }, expect: [422, 'VALIDATION_ERROR', 'recursive'] },
  { name: 'mkdir: a site pending deletion', method: 'POST', path: `${V1}/sites/{doomed}/files/mkdir/`, body: { path: 'x' }, expect: [409, 'CONFLICT', null] },
  ...bothWays({ name: 'mkdir: path empty', method: 'POST', path: `${F}/mkdir/`, body: { path: '' }, expect: [422, 'VALIDATION_ERROR', 'path'] }),

  // ---- POST files/delete/ ----
  { name: 'delete file: path missing', method: 'POST', path: `${F}/delete/`, body: {}, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'delete file: path empty (the home)', method: 'POST', path: `${F}/delete/`, body: { path: '' }, expect: [422, 'VALIDATION_ERROR', 'path'], says: /delete what is inside it instead/ },
  { name: 'delete file: path "./"', method: 'POST', path: `${F}/delete/`, body: { path: './' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'delete file: path "//"', method: 'POST', path: `${F}/delete/`, body: { path: '//' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'delete file: path ".."', method: 'POST', path: `${F}/delete/`, body: { path: '..' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'delete file: /etc', method: 'POST', path: `${F}/delete/`, body: { path: '/etc' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'delete file: through a symbolic link to /tmp', method: 'POST', path: `${F}/delete/`, body: { path: 'public/evil-dir/x' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'delete file: nothing there', method: 'POST', path: `${F}/delete/`, body: { path: 'public/nope' }, expect: [404, 'NOT_FOUND', 'path'] },
  { name: 'delete file: paths as an array', method: 'POST', path: `${F}/delete/`, body: { path: ['public', 'logs'] }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'delete file: unknown field', method: 'POST', path: `${F}/delete/`, body: { path: 'public/index.html', dry_run: true }, expect: [422, 'VALIDATION_ERROR', 'dry_run'] },
  { name: 'delete file: read-only key', method: 'POST', path: `${F}/delete/`, as: 'reader', body: { path: 'public/index.html' }, expect: [403, 'FORBIDDEN', null] },
  { name: 'delete file: a site pending deletion', method: 'POST', path: `${V1}/sites/{doomed}/files/delete/`, body: { path: 'public' }, expect: [409, 'CONFLICT', null] },
  { name: 'delete file: DELETE', method: 'DELETE', path: `${F}/delete/`, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'POST'] },
  ...bothWays({ name: 'delete file: path empty', method: 'POST', path: `${F}/delete/`, body: { path: '' }, expect: [422, 'VALIDATION_ERROR', 'path'] }),
]

const h = inProcess({ runtime: 'docker' })
let f: SiteFixture
beforeAll(async () => {
  f = await siteFixture(h)
}, 90_000)
afterAll(() => h.close())

describe('site routes: bad inputs get the error envelope and change nothing', () => {
  it.each([...siteRows, ...fileRows, ...siteKeyRows].map((row, index) => ({ ...row, index })))('$name', (row) => checkRow(h, f, row, row.index))

  it('the site-scoped key works on its own site (so its 404s elsewhere are about the site)', async () => {
    const own = await h.call('GET', `${V1}/sites/${f.values.shared}/files/?path=public`, { key: f.keys.site })
    expect(own.status, own.text).toBe(200)
  })
})
