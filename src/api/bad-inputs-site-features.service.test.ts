/**
 * Bad inputs against the routes of a site's features: logs, deploy and deployments, metrics,
 * snapshots and backups, SSH, modules, and the claim flow; table-driven on real sites (real
 * SQLite, real Docker). Each row is one request and the error it must get; checkRow
 * (helpers/bad-inputs.ts) also checks the envelope, that nothing leaks, and that nothing changed
 * (deployments, archives, authorized_keys, module states, claim tokens, keys...).
 */
import { afterAll, beforeAll, describe, it } from 'vitest'
import { bothWays, checkRow, SQL, TEN_MB, TEN_MB_JSON, UNKNOWN_UUID, V1, type Row } from '../../test/helpers/bad-inputs'
import { inProcess } from '../../test/helpers/in-process'
import { ED25519, siteFixture, type SiteFixture } from '../../test/helpers/site-fixture'

const S = `${V1}/sites/{shared}`
const P = `${V1}/sites/{vps}`
const LONG = 'a'.repeat(200)
const TEN_MB_HEADERS = { 'content-length': String(TEN_MB_JSON.length) }
const SIXTEEN_MB_JSON = `{"source":{}${' '.repeat(16 * 1024 * 1024)}}`
const HEX64 = 'ab'.repeat(32)

const logRows: Row[] = [
  { name: 'logs: lines=0', method: 'GET', path: `${S}/logs/?lines=0`, expect: [422, 'VALIDATION_ERROR', 'lines'], says: /'lines'.*integer from 1 to 500/ },
  { name: 'logs: lines=501', method: 'GET', path: `${S}/logs/?lines=501`, expect: [422, 'VALIDATION_ERROR', 'lines'] },
  { name: 'logs: lines=-1', method: 'GET', path: `${S}/logs/?lines=-1`, expect: [422, 'VALIDATION_ERROR', 'lines'] },
  { name: 'logs: lines=1.5', method: 'GET', path: `${S}/logs/?lines=1.5`, expect: [422, 'VALIDATION_ERROR', 'lines'] },
  { name: 'logs: lines=ten', method: 'GET', path: `${S}/logs/?lines=ten`, expect: [422, 'VALIDATION_ERROR', 'lines'] },
  { name: 'logs: lines=0x10 (hex)', method: 'GET', path: `${S}/logs/?lines=0x10`, expect: [422, 'VALIDATION_ERROR', 'lines'], says: /written in digits/ },
  { name: 'logs: lines=1e1 (exponent)', method: 'GET', path: `${S}/logs/?lines=1e1`, expect: [422, 'VALIDATION_ERROR', 'lines'] },
  { name: 'logs: lines=+5 (sign)', method: 'GET', path: `${S}/logs/?lines=%2B5`, expect: [422, 'VALIDATION_ERROR', 'lines'] },
  { name: 'logs: lines=" 5" (space)', method: 'GET', path: `${S}/logs/?lines=%205`, expect: [422, 'VALIDATION_ERROR', 'lines'] },
  { name: 'metrics: days=1e1 (exponent)', method: 'GET', path: `${S}/metrics/?days=1e1`, expect: [422, 'VALIDATION_ERROR', 'days'], says: /written in digits/ },
  { name: 'logs: lines empty', method: 'GET', path: `${S}/logs/?lines=`, expect: [422, 'VALIDATION_ERROR', 'lines'], says: /'lines' is empty; send a whole number from 1 to 500, or leave it out for the default 100/ },
  { name: 'logs: lines of 20 digits', method: 'GET', path: `${S}/logs/?lines=99999999999999999999`, expect: [422, 'VALIDATION_ERROR', 'lines'] },
  { name: 'logs: type=ERROR', method: 'GET', path: `${S}/logs/?type=ERROR`, expect: [422, 'VALIDATION_ERROR', 'type'], says: /one of error, access, php/ },
  { name: 'logs: type=../../etc/passwd', method: 'GET', path: `${S}/logs/?type=../../etc/passwd`, expect: [422, 'VALIDATION_ERROR', 'type'] },
  { name: 'logs: type empty', method: 'GET', path: `${S}/logs/?type=`, expect: [422, 'VALIDATION_ERROR', 'type'] },
  { name: 'logs: search of 201 characters', method: 'GET', path: `${S}/logs/?search=${'s'.repeat(201)}`, expect: [422, 'VALIDATION_ERROR', 'search'], says: /at most 200/ },
  { name: 'logs: unknown query parameter', method: 'GET', path: `${S}/logs/?tail=10`, expect: [422, 'VALIDATION_ERROR', 'tail'] },
  { name: 'logs: type as an array (type[])', method: 'GET', path: `${S}/logs/?type[]=error`, expect: [422, 'VALIDATION_ERROR', 'type[]'] },
  { name: "logs: another account's site", method: 'GET', path: `${V1}/sites/{foreign}/logs/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'logs: slug of 200 characters', method: 'GET', path: `${V1}/sites/${LONG}/logs/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'logs: no key', method: 'GET', path: `${S}/logs/`, as: null, expect: [401, 'UNAUTHORIZED', null] },
  { name: 'logs: POST', method: 'POST', path: `${S}/logs/`, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'GET'] },
  ...bothWays({ name: 'logs: lines=0', method: 'GET', path: `${S}/logs/?lines=0`, expect: [422, 'VALIDATION_ERROR', 'lines'] }),
]

const deployRows: Row[] = [
  { name: 'deploy: a body with a field', method: 'POST', path: `${S}/deploy/`, body: { ref: 'main' }, expect: [422, 'VALIDATION_ERROR', 'ref'], says: /Unknown field 'ref'; remove it/ },
  { name: 'deploy: a source with neither git nor an archive', method: 'POST', path: `${S}/deploy/`, body: { source: { ref: 'main' } }, expect: [422, 'VALIDATION_ERROR', 'source'], says: /"git".*"archive_base64"/ },
  { name: 'deploy: a source with an unknown field', method: 'POST', path: `${S}/deploy/`, body: { source: { git: 'https://example.com/x.git', branch: 'main' } }, expect: [422, 'VALIDATION_ERROR', 'source.branch'] },
  { name: 'deploy: archive_base64 not base64', method: 'POST', path: `${S}/deploy/`, body: { source: { archive_base64: 'not base64!' } }, expect: [422, 'VALIDATION_ERROR', 'source.archive_base64'] },
  { name: 'deploy: JSON array body', method: 'POST', path: `${S}/deploy/`, raw: '[]', expect: [422, 'VALIDATION_ERROR', null], says: /must be a JSON object/ },
  { name: 'deploy: truncated JSON', method: 'POST', path: `${S}/deploy/`, raw: '{bad', expect: [400, 'VALIDATION_ERROR', null] },
  // deploySite takes up to ~14 MB of JSON (source.archive_base64, 10 MiB decoded, for MCP clients).
  { name: 'deploy: 16 MB body', method: 'POST', path: `${S}/deploy/`, raw: SIXTEEN_MB_JSON, headers: { 'content-length': String(SIXTEEN_MB_JSON.length) }, expect: [413, 'PAYLOAD_TOO_LARGE', 'source.archive_base64'] },
  { name: 'deploy: 16 MB body chunked', method: 'POST', path: `${S}/deploy/`, chunked: 16 * 1024 * 1024, expect: [413, 'PAYLOAD_TOO_LARGE', 'source.archive_base64'] },
  { name: 'deploy: a site pending deletion', method: 'POST', path: `${V1}/sites/{doomed}/deploy/`, expect: [409, 'CONFLICT', null], says: /restore\/ first/ },
  { name: "deploy: another account's site", method: 'POST', path: `${V1}/sites/{foreign}/deploy/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'deploy: slug "..%2F"', method: 'POST', path: `${V1}/sites/..%2F/deploy/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'deploy: read-only key', method: 'POST', path: `${S}/deploy/`, as: 'reader', expect: [403, 'FORBIDDEN', null] },
  { name: 'deploy: GET', method: 'GET', path: `${S}/deploy/`, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'POST'] },
  ...bothWays({ name: 'deploy: a body with a field', method: 'POST', path: `${S}/deploy/`, body: { ref: 'main' }, expect: [422, 'VALIDATION_ERROR', 'ref'] }),
  { name: "deployments: another account's site", method: 'GET', path: `${V1}/sites/{foreign}/deployments/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'deployment: id "not-a-uuid"', method: 'GET', path: `${S}/deployments/not-a-uuid/`, expect: [422, 'VALIDATION_ERROR', 'deployment_id'], says: /UUID such as/ },
  { name: 'deployment: id a UUID with a trailing character', method: 'GET', path: `${S}/deployments/${UNKNOWN_UUID}0/`, expect: [422, 'VALIDATION_ERROR', 'deployment_id'] },
  { name: 'deployment: id SQL injection', method: 'GET', path: `${S}/deployments/${SQL}/`, expect: [422, 'VALIDATION_ERROR', 'deployment_id'] },
  { name: 'deployment: id with broken percent-encoding', method: 'GET', path: `${S}/deployments/%ZZ/`, expect: [422, 'VALIDATION_ERROR', 'deployment_id'] },
  { name: 'deployment: unknown id', method: 'GET', path: `${S}/deployments/${UNKNOWN_UUID}/`, expect: [404, 'NOT_FOUND', 'deployment_id'], says: /deployments\/ lists them/ },
  { name: "deployment: another account's deployment under one's own site", method: 'GET', path: `${S}/deployments/{deployment}/`, expect: [404, 'NOT_FOUND', 'deployment_id'] },
  { name: "deployment: another account's site and deployment", method: 'GET', path: `${V1}/sites/{foreign}/deployments/{deployment}/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  ...bothWays({ name: 'deployment: unknown id', method: 'GET', path: `${S}/deployments/${UNKNOWN_UUID}/`, expect: [404, 'NOT_FOUND', 'deployment_id'] }),
  { name: 'rollback: a body with a field', method: 'POST', path: `${S}/deployments/${UNKNOWN_UUID}/rollback/`, body: { ref: 'main' }, expect: [422, 'VALIDATION_ERROR', 'ref'], says: /takes no body; remove the field 'ref'/ },
  { name: 'rollback: id "not-a-uuid"', method: 'POST', path: `${S}/deployments/not-a-uuid/rollback/`, expect: [422, 'VALIDATION_ERROR', 'deployment_id'], says: /UUID such as/ },
  { name: 'rollback: unknown id', method: 'POST', path: `${S}/deployments/${UNKNOWN_UUID}/rollback/`, expect: [404, 'NOT_FOUND', 'deployment_id'], says: /deployments\/ lists them/ },
  { name: "rollback: another account's deployment under one's own site", method: 'POST', path: `${S}/deployments/{deployment}/rollback/`, expect: [404, 'NOT_FOUND', 'deployment_id'] },
  { name: "rollback: another account's site and deployment", method: 'POST', path: `${V1}/sites/{foreign}/deployments/{deployment}/rollback/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'rollback: a site pending deletion', method: 'POST', path: `${V1}/sites/{doomed}/deployments/${UNKNOWN_UUID}/rollback/`, expect: [409, 'CONFLICT', null], says: /restore\/ first/ },
  { name: 'rollback: read-only key', method: 'POST', path: `${S}/deployments/${UNKNOWN_UUID}/rollback/`, as: 'reader', expect: [403, 'FORBIDDEN', null] },
  { name: 'rollback: GET', method: 'GET', path: `${S}/deployments/${UNKNOWN_UUID}/rollback/`, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'POST'] },
  ...bothWays({ name: 'rollback: unknown id', method: 'POST', path: `${S}/deployments/${UNKNOWN_UUID}/rollback/`, expect: [404, 'NOT_FOUND', 'deployment_id'] }),
]

const metricsRows: Row[] = [
  { name: 'metrics: days=0', method: 'GET', path: `${S}/metrics/?days=0`, expect: [422, 'VALIDATION_ERROR', 'days'], says: /'days'.*integer from 1 to 90/ },
  { name: 'metrics: days=91', method: 'GET', path: `${S}/metrics/?days=91`, expect: [422, 'VALIDATION_ERROR', 'days'] },
  { name: 'metrics: days=-7', method: 'GET', path: `${S}/metrics/?days=-7`, expect: [422, 'VALIDATION_ERROR', 'days'] },
  { name: 'metrics: days=7.5', method: 'GET', path: `${S}/metrics/?days=7.5`, expect: [422, 'VALIDATION_ERROR', 'days'] },
  { name: 'metrics: days=1e2', method: 'GET', path: `${S}/metrics/?days=1e2`, expect: [422, 'VALIDATION_ERROR', 'days'] },
  { name: 'metrics: days=Infinity', method: 'GET', path: `${S}/metrics/?days=Infinity`, expect: [422, 'VALIDATION_ERROR', 'days'] },
  { name: 'metrics: days=week', method: 'GET', path: `${S}/metrics/?days=week`, expect: [422, 'VALIDATION_ERROR', 'days'] },
  { name: 'metrics: days empty', method: 'GET', path: `${S}/metrics/?days=`, expect: [422, 'VALIDATION_ERROR', 'days'], says: /'days' is empty; send a whole number from 1 to 90, or leave it out for the default 7/ },
  { name: 'metrics: unknown query parameter', method: 'GET', path: `${S}/metrics/?day=7`, expect: [422, 'VALIDATION_ERROR', 'day'], says: /Unknown query parameter 'day'/ },
  { name: "metrics: another account's site", method: 'GET', path: `${V1}/sites/{foreign}/metrics/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'metrics: no key', method: 'GET', path: `${S}/metrics/`, as: null, expect: [401, 'UNAUTHORIZED', null] },
  ...bothWays({ name: 'metrics: days=91', method: 'GET', path: `${S}/metrics/?days=91`, expect: [422, 'VALIDATION_ERROR', 'days'] }),
]

const archiveRows: Row[] = [
  { name: 'snapshot: a shared plan', method: 'POST', path: `${S}/snapshot/`, expect: [403, 'FORBIDDEN', null], says: /vps and dedicated plans/ },
  { name: 'snapshot: a body with a field', method: 'POST', path: `${P}/snapshot/`, body: { name: 'before-upgrade' }, expect: [422, 'VALIDATION_ERROR', 'name'] },
  { name: 'snapshot: JSON array body', method: 'POST', path: `${P}/snapshot/`, raw: '[{}]', expect: [422, 'VALIDATION_ERROR', null] },
  { name: 'snapshot: XML body', method: 'POST', path: `${P}/snapshot/`, raw: '<snapshot/>', headers: { 'content-type': 'application/xml' }, expect: [400, 'VALIDATION_ERROR', null] },
  { name: 'snapshot: 10 MB body', method: 'POST', path: `${P}/snapshot/`, raw: TEN_MB_JSON, headers: TEN_MB_HEADERS, expect: [413, 'PAYLOAD_TOO_LARGE', null] },
  { name: 'snapshot: a site pending deletion', method: 'POST', path: `${V1}/sites/{doomed}/snapshot/`, expect: [409, 'CONFLICT', null] },
  { name: "snapshot: another account's site", method: 'POST', path: `${V1}/sites/{foreign}/snapshot/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'snapshot: read-only key', method: 'POST', path: `${P}/snapshot/`, as: 'reader', expect: [403, 'FORBIDDEN', null] },
  ...bothWays({ name: 'snapshot: a shared plan', method: 'POST', path: `${S}/snapshot/`, expect: [403, 'FORBIDDEN', null] }),
  { name: "snapshots: another account's site", method: 'GET', path: `${V1}/sites/{foreign}/snapshots/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'snapshot get: id "nope"', method: 'GET', path: `${P}/snapshots/nope/`, expect: [422, 'VALIDATION_ERROR', 'snapshot_id'], says: /UUID such as/ },
  { name: 'snapshot get: unknown id', method: 'GET', path: `${P}/snapshots/${UNKNOWN_UUID}/`, expect: [404, 'NOT_FOUND', 'snapshot_id'], says: /snapshots\/ lists them/ },
  { name: "snapshot get: the vps site's snapshot under another site", method: 'GET', path: `${S}/snapshots/{snapshot}/`, expect: [404, 'NOT_FOUND', 'snapshot_id'] },
  { name: 'snapshot restore: id "1"', method: 'POST', path: `${P}/snapshots/1/restore/`, expect: [422, 'VALIDATION_ERROR', 'snapshot_id'] },
  { name: 'snapshot restore: unknown id', method: 'POST', path: `${P}/snapshots/${UNKNOWN_UUID}/restore/`, expect: [404, 'NOT_FOUND', 'snapshot_id'] },
  { name: 'snapshot restore: a body with a field', method: 'POST', path: `${P}/snapshots/{snapshot}/restore/`, body: { overwrite: true }, expect: [422, 'VALIDATION_ERROR', 'overwrite'] },
  { name: 'snapshot restore: on a shared plan', method: 'POST', path: `${S}/snapshots/{snapshot}/restore/`, expect: [403, 'FORBIDDEN', null] },
  { name: "snapshot restore: another account's site", method: 'POST', path: `${V1}/sites/{foreign}/snapshots/{snapshot}/restore/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'snapshot restore: read-only key', method: 'POST', path: `${P}/snapshots/{snapshot}/restore/`, as: 'reader', expect: [403, 'FORBIDDEN', null] },
  { name: 'snapshot restore: GET', method: 'GET', path: `${P}/snapshots/{snapshot}/restore/`, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'POST'] },
  ...bothWays({ name: 'snapshot restore: a body with a field', method: 'POST', path: `${P}/snapshots/{snapshot}/restore/`, body: { overwrite: true }, expect: [422, 'VALIDATION_ERROR', 'overwrite'] }),
  { name: 'snapshot delete: id SQL injection', method: 'DELETE', path: `${P}/snapshots/${SQL}/`, expect: [422, 'VALIDATION_ERROR', 'snapshot_id'] },
  { name: 'snapshot delete: unknown id', method: 'DELETE', path: `${P}/snapshots/${UNKNOWN_UUID}/`, expect: [404, 'NOT_FOUND', 'snapshot_id'] },
  { name: 'snapshot delete: a body with a field', method: 'DELETE', path: `${P}/snapshots/{snapshot}/`, body: { keep_file: true }, expect: [422, 'VALIDATION_ERROR', 'keep_file'] },
  { name: 'snapshot delete: read-only key', method: 'DELETE', path: `${P}/snapshots/{snapshot}/`, as: 'reader', expect: [403, 'FORBIDDEN', null] },
  { name: "backups: another account's site", method: 'GET', path: `${V1}/sites/{foreign}/backups/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'backup get: id "latest"', method: 'GET', path: `${S}/backups/latest/`, expect: [422, 'VALIDATION_ERROR', 'backup_id'] },
  { name: 'backup get: a snapshot id', method: 'GET', path: `${P}/backups/{snapshot}/`, expect: [404, 'NOT_FOUND', 'backup_id'], says: /backups\/ lists them/ },
  { name: 'backup restore: unknown id', method: 'POST', path: `${S}/backups/${UNKNOWN_UUID}/restore/`, expect: [404, 'NOT_FOUND', 'backup_id'] },
  { name: 'backup restore: a snapshot id', method: 'POST', path: `${P}/backups/{snapshot}/restore/`, expect: [404, 'NOT_FOUND', 'backup_id'] },
  { name: 'backup restore: a body with a field', method: 'POST', path: `${S}/backups/${UNKNOWN_UUID}/restore/`, body: { files: ['public'] }, expect: [422, 'VALIDATION_ERROR', 'files'] },
  { name: 'backup restore: a site pending deletion', method: 'POST', path: `${V1}/sites/{doomed}/backups/${UNKNOWN_UUID}/restore/`, expect: [409, 'CONFLICT', null] },
]

const sshRows: Row[] = [
  { name: 'ssh: a shared plan', method: 'GET', path: `${S}/ssh/`, expect: [403, 'FORBIDDEN', null], says: /scale to a vps or dedicated plan/ },
  { name: "ssh: another account's site", method: 'GET', path: `${V1}/sites/{foreign}/ssh/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'ssh keys: a shared plan', method: 'GET', path: `${S}/ssh/keys/`, expect: [403, 'FORBIDDEN', null] },
  { name: 'ssh key add: public_key missing', method: 'POST', path: `${P}/ssh/keys/`, body: {}, expect: [422, 'VALIDATION_ERROR', 'public_key'] },
  { name: 'ssh key add: public_key empty', method: 'POST', path: `${P}/ssh/keys/`, body: { public_key: '' }, expect: [422, 'VALIDATION_ERROR', 'public_key'] },
  { name: 'ssh key add: public_key as a number', method: 'POST', path: `${P}/ssh/keys/`, body: { public_key: 42 }, expect: [422, 'VALIDATION_ERROR', 'public_key'] },
  { name: 'ssh key add: public_key as an array of lines', method: 'POST', path: `${P}/ssh/keys/`, body: { public_key: [ED25519] }, expect: [422, 'VALIDATION_ERROR', 'public_key'] },
  { name: 'ssh key add: public_key of 16,385 characters', method: 'POST', path: `${P}/ssh/keys/`, body: { public_key: 'x'.repeat(16_385) }, expect: [422, 'VALIDATION_ERROR', 'public_key'] },
  { name: 'ssh key add: a DSA key', method: 'POST', path: `${P}/ssh/keys/`, body: { public_key: 'ssh-dss AAAAB3NzaC1kc3MAAACBAP test' }, expect: [422, 'VALIDATION_ERROR', 'public_key'], says: /use ssh-ed25519/ },
  { name: 'ssh key add: a truncated key', method: 'POST', path: `${P}/ssh/keys/`, body: { public_key: 'ssh-ed25519 AAAA' }, expect: [422, 'VALIDATION_ERROR', 'public_key'], says: /paste the whole \.pub line/ },
  { name: 'ssh key add: two keys on two lines', method: 'POST', path: `${P}/ssh/keys/`, body: { public_key: `${ED25519}\n${ED25519}` }, expect: [422, 'VALIDATION_ERROR', 'public_key'], says: /one at a time/ },
  { name: 'ssh key add: a line with a NUL byte', method: 'POST', path: `${P}/ssh/keys/`, body: { public_key: `${ED25519}\u0000` }, expect: [422, 'VALIDATION_ERROR', 'public_key'] },
  { name: 'ssh key add: a private key', method: 'POST', path: `${P}/ssh/keys/`, body: { public_key: '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n' }, expect: [422, 'VALIDATION_ERROR', 'public_key'], says: /private key; keep it secret/ },
  { name: 'ssh key add: unknown field', method: 'POST', path: `${P}/ssh/keys/`, body: { public_key: ED25519, user: 'root' }, expect: [422, 'VALIDATION_ERROR', 'user'] },
  { name: 'ssh key add: JSON array body', method: 'POST', path: `${P}/ssh/keys/`, raw: `["${ED25519}"]`, expect: [422, 'VALIDATION_ERROR', null], says: /fields public_key/ },
  { name: 'ssh key add: the key as plain text', method: 'POST', path: `${P}/ssh/keys/`, raw: ED25519, headers: { 'content-type': 'text/plain' }, expect: [400, 'VALIDATION_ERROR', null] },
  { name: 'ssh key add: 10 MB body', method: 'POST', path: `${P}/ssh/keys/`, raw: TEN_MB_JSON, headers: TEN_MB_HEADERS, expect: [413, 'PAYLOAD_TOO_LARGE', null] },
  { name: 'ssh key add: a shared plan', method: 'POST', path: `${S}/ssh/keys/`, body: { public_key: ED25519 }, expect: [403, 'FORBIDDEN', null] },
  { name: 'ssh key add: read-only key', method: 'POST', path: `${P}/ssh/keys/`, as: 'reader', body: { public_key: ED25519 }, expect: [403, 'FORBIDDEN', null] },
  { name: "ssh key add: another account's site", method: 'POST', path: `${V1}/sites/{foreign}/ssh/keys/`, body: { public_key: ED25519 }, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  ...bothWays({ name: 'ssh key add: a truncated key', method: 'POST', path: `${P}/ssh/keys/`, body: { public_key: 'ssh-ed25519 AAAA' }, expect: [422, 'VALIDATION_ERROR', 'public_key'] }),
  { name: 'ssh key remove: key_id "abc"', method: 'DELETE', path: `${P}/ssh/keys/abc/`, expect: [422, 'VALIDATION_ERROR', 'key_id'], says: /64 hex characters/ },
  { name: 'ssh key remove: key_id in uppercase hex', method: 'DELETE', path: `${P}/ssh/keys/${HEX64.toUpperCase()}/`, expect: [422, 'VALIDATION_ERROR', 'key_id'] },
  { name: 'ssh key remove: key_id of 63 characters', method: 'DELETE', path: `${P}/ssh/keys/${HEX64.slice(1)}/`, expect: [422, 'VALIDATION_ERROR', 'key_id'] },
  { name: 'ssh key remove: key_id a path', method: 'DELETE', path: `${P}/ssh/keys/..%2F..%2F.ssh%2Fauthorized_keys/`, expect: [422, 'VALIDATION_ERROR', 'key_id'] },
  { name: 'ssh key remove: unknown key_id', method: 'DELETE', path: `${P}/ssh/keys/${HEX64}/`, expect: [404, 'NOT_FOUND', 'key_id'], says: /ssh\/keys\/ lists them/ },
  { name: 'ssh key remove: a body with a field', method: 'DELETE', path: `${P}/ssh/keys/{sshKey}/`, body: { all: true }, expect: [422, 'VALIDATION_ERROR', 'all'] },
  { name: 'ssh key remove: read-only key', method: 'DELETE', path: `${P}/ssh/keys/{sshKey}/`, as: 'reader', expect: [403, 'FORBIDDEN', null] },
  { name: 'ssh key remove: a shared plan', method: 'DELETE', path: `${S}/ssh/keys/{sshKey}/`, expect: [403, 'FORBIDDEN', null] },
  { name: "ssh key remove: another account's site", method: 'DELETE', path: `${V1}/sites/{foreign}/ssh/keys/{sshKey}/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  ...bothWays({ name: 'ssh key remove: unknown key_id', method: 'DELETE', path: `${P}/ssh/keys/${HEX64}/`, expect: [404, 'NOT_FOUND', 'key_id'] }),
  // enableGitPush: refused before anything moves (the vps site stays on its plan's image).
  ...bothWays({ name: 'git push: a shared plan', method: 'POST', path: `${S}/ssh/git/`, expect: [403, 'FORBIDDEN', null], says: /scale to a vps or dedicated plan/ }),
  { name: "git push: another account's site", method: 'POST', path: `${V1}/sites/{foreign}/ssh/git/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'git push: read-only key', method: 'POST', path: `${P}/ssh/git/`, as: 'reader', expect: [403, 'FORBIDDEN', null] },
  { name: 'git push: a body with a field', method: 'POST', path: `${P}/ssh/git/`, body: { branch: 'dev' }, expect: [422, 'VALIDATION_ERROR', 'branch'] },
  { name: 'git push: GET', method: 'GET', path: `${P}/ssh/git/`, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'POST'] },
]

const moduleRows: Row[] = [
  { name: "modules: another account's site", method: 'GET', path: `${V1}/sites/{foreign}/modules/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'toggle: enabled="yes"', method: 'POST', path: `${S}/modules/seo/toggle/`, body: { enabled: 'yes' }, expect: [422, 'VALIDATION_ERROR', 'enabled'], says: /'enabled' must be true or false/ },
  { name: 'toggle: enabled=1', method: 'POST', path: `${S}/modules/seo/toggle/`, body: { enabled: 1 }, expect: [422, 'VALIDATION_ERROR', 'enabled'] },
  { name: 'toggle: enabled=null', method: 'POST', path: `${S}/modules/seo/toggle/`, body: { enabled: null }, expect: [422, 'VALIDATION_ERROR', 'enabled'] },
  { name: 'toggle: enabled=[true]', method: 'POST', path: `${S}/modules/seo/toggle/`, body: { enabled: [true] }, expect: [422, 'VALIDATION_ERROR', 'enabled'] },
  { name: 'toggle: unknown field "enable"', method: 'POST', path: `${S}/modules/seo/toggle/`, body: { enable: true }, expect: [422, 'VALIDATION_ERROR', 'enable'], says: /Unknown field 'enable'/ },
  { name: 'toggle: JSON array body', method: 'POST', path: `${S}/modules/seo/toggle/`, raw: '[true]', expect: [422, 'VALIDATION_ERROR', null], says: /fields enabled/ },
  { name: 'toggle: JSON true body', method: 'POST', path: `${S}/modules/seo/toggle/`, raw: 'true', expect: [422, 'VALIDATION_ERROR', null] },
  { name: 'toggle: JSON with trailing garbage', method: 'POST', path: `${S}/modules/seo/toggle/`, raw: '{"enabled":true}x', expect: [400, 'VALIDATION_ERROR', null] },
  { name: 'toggle: 10 MB body', method: 'POST', path: `${S}/modules/seo/toggle/`, raw: TEN_MB_JSON, headers: TEN_MB_HEADERS, expect: [413, 'PAYLOAD_TOO_LARGE', null] },
  { name: 'toggle: unknown module', method: 'POST', path: `${S}/modules/crypto-miner/toggle/`, expect: [404, 'NOT_FOUND', 'module_name'], says: /modules are chatbot, seo, translation, content/ },
  { name: 'toggle: module in uppercase', method: 'POST', path: `${S}/modules/SEO/toggle/`, expect: [404, 'NOT_FOUND', 'module_name'] },
  { name: 'toggle: module "__proto__"', method: 'POST', path: `${S}/modules/__proto__/toggle/`, expect: [404, 'NOT_FOUND', 'module_name'] },
  { name: 'toggle: module "constructor"', method: 'POST', path: `${S}/modules/constructor/toggle/`, expect: [404, 'NOT_FOUND', 'module_name'] },
  { name: 'toggle: module name of 200 characters', method: 'POST', path: `${S}/modules/${LONG}/toggle/`, expect: [422, 'VALIDATION_ERROR', 'module_name'] },
  { name: 'toggle: a module outside the plan', method: 'POST', path: `${S}/modules/chatbot/toggle/`, body: { enabled: true }, expect: [403, 'FORBIDDEN', 'module_name'], says: /scale to a plan that does/ },
  { name: 'toggle: a site pending deletion', method: 'POST', path: `${V1}/sites/{doomed}/modules/seo/toggle/`, expect: [409, 'CONFLICT', null] },
  { name: "toggle: another account's site", method: 'POST', path: `${V1}/sites/{foreign}/modules/seo/toggle/`, expect: [404, 'NOT_FOUND', 'tenant_slug'] },
  { name: 'toggle: read-only key', method: 'POST', path: `${S}/modules/seo/toggle/`, as: 'reader', expect: [403, 'FORBIDDEN', null] },
  { name: 'toggle: GET', method: 'GET', path: `${S}/modules/seo/toggle/`, expect: [405, 'METHOD_NOT_ALLOWED', null], header: ['allow', 'POST'] },
  ...bothWays({ name: 'toggle: enabled="yes"', method: 'POST', path: `${S}/modules/seo/toggle/`, body: { enabled: 'yes' }, expect: [422, 'VALIDATION_ERROR', 'enabled'] }),
]

/** Claim routes need no key; requests that pass validation count against their rate limit. */
const claimRows: Row[] = [
  { name: 'claim request: site_slug missing', method: 'POST', path: `${V1}/keys/claim/request/`, as: null, body: {}, expect: [422, 'VALIDATION_ERROR', 'site_slug'] },
  { name: 'claim request: site_slug empty', method: 'POST', path: `${V1}/keys/claim/request/`, as: null, body: { site_slug: '' }, expect: [422, 'VALIDATION_ERROR', 'site_slug'] },
  { name: 'claim request: site_slug as a number', method: 'POST', path: `${V1}/keys/claim/request/`, as: null, body: { site_slug: 7 }, expect: [422, 'VALIDATION_ERROR', 'site_slug'] },
  { name: 'claim request: site_slug as an array', method: 'POST', path: `${V1}/keys/claim/request/`, as: null, body: { site_slug: ['{vps}'] }, expect: [422, 'VALIDATION_ERROR', 'site_slug'] },
  { name: 'claim request: site_slug of 200 characters', method: 'POST', path: `${V1}/keys/claim/request/`, as: null, body: { site_slug: LONG }, expect: [422, 'VALIDATION_ERROR', 'site_slug'] },
  { name: 'claim request: site_slug ".."', method: 'POST', path: `${V1}/keys/claim/request/`, as: null, body: { site_slug: '..' }, expect: [422, 'VALIDATION_ERROR', 'site_slug'], counted: true, says: /check the slug/ },
  { name: 'claim request: site_slug "../../etc"', method: 'POST', path: `${V1}/keys/claim/request/`, as: null, body: { site_slug: '../../etc' }, expect: [422, 'VALIDATION_ERROR', 'site_slug'], counted: true },
  { name: 'claim request: an unknown site', method: 'POST', path: `${V1}/keys/claim/request/`, as: null, body: { site_slug: 'no-such-site' }, expect: [422, 'VALIDATION_ERROR', 'site_slug'], counted: true },
  { name: 'claim request: a slug in uppercase', method: 'POST', path: `${V1}/keys/claim/request/`, as: null, body: { site_slug: 'BAD-SITE' }, expect: [422, 'VALIDATION_ERROR', 'site_slug'], counted: true },
  { name: 'claim request: a site that has a claimed key', method: 'POST', path: `${V1}/keys/claim/request/`, as: null, body: { site_slug: '{shared}' }, expect: [422, 'VALIDATION_ERROR', 'site_slug'], counted: true, says: /revoke it/ },
  { name: 'claim request: a site pending deletion', method: 'POST', path: `${V1}/keys/claim/request/`, as: null, body: { site_slug: '{doomed}' }, expect: [422, 'VALIDATION_ERROR', 'site_slug'], counted: true },
  { name: 'claim request: unknown field', method: 'POST', path: `${V1}/keys/claim/request/`, as: null, body: { site_slug: '{vps}', path: '/tmp/x' }, expect: [422, 'VALIDATION_ERROR', 'path'] },
  { name: 'claim request: JSON array body', method: 'POST', path: `${V1}/keys/claim/request/`, as: null, raw: '["{vps}"]', expect: [422, 'VALIDATION_ERROR', null], says: /fields site_slug/ },
  { name: 'claim request: truncated JSON', method: 'POST', path: `${V1}/keys/claim/request/`, as: null, raw: '{"site_slug":', expect: [400, 'VALIDATION_ERROR', null] },
  { name: 'claim request: 10 MB body', method: 'POST', path: `${V1}/keys/claim/request/`, as: null, raw: TEN_MB_JSON, headers: TEN_MB_HEADERS, expect: [413, 'PAYLOAD_TOO_LARGE', null] },
  ...bothWays({ name: 'claim request: site_slug missing', method: 'POST', path: `${V1}/keys/claim/request/`, as: null, body: {}, expect: [422, 'VALIDATION_ERROR', 'site_slug'] }),
  { name: 'claim: claim_token missing', method: 'POST', path: `${V1}/keys/claim/`, as: null, body: {}, expect: [422, 'VALIDATION_ERROR', 'claim_token'] },
  { name: 'claim: claim_token empty', method: 'POST', path: `${V1}/keys/claim/`, as: null, body: { claim_token: '' }, expect: [422, 'VALIDATION_ERROR', 'claim_token'] },
  { name: 'claim: claim_token as a number', method: 'POST', path: `${V1}/keys/claim/`, as: null, body: { claim_token: 1 }, expect: [422, 'VALIDATION_ERROR', 'claim_token'] },
  { name: 'claim: claim_token of 201 characters', method: 'POST', path: `${V1}/keys/claim/`, as: null, body: { claim_token: 't'.repeat(201) }, expect: [422, 'VALIDATION_ERROR', 'claim_token'] },
  { name: 'claim: a made-up token', method: 'POST', path: `${V1}/keys/claim/`, as: null, body: { claim_token: `svc_claim_${'0'.repeat(48)}` }, expect: [422, 'VALIDATION_ERROR', 'claim_token'], counted: true, says: /request a new one/ },
  { name: 'claim: spaces only', method: 'POST', path: `${V1}/keys/claim/`, as: null, body: { claim_token: '   ' }, expect: [422, 'VALIDATION_ERROR', 'claim_token'], counted: true },
  { name: 'claim: a token already used', method: 'POST', path: `${V1}/keys/claim/`, as: null, body: { claim_token: '{usedToken}' }, expect: [422, 'VALIDATION_ERROR', 'claim_token'], counted: true, says: /already used/ },
  { name: 'claim: unknown field', method: 'POST', path: `${V1}/keys/claim/`, as: null, body: { claim_token: '{usedToken}', scopes: ['admin'] }, expect: [422, 'VALIDATION_ERROR', 'scopes'] },
  { name: 'claim: JSON string body', method: 'POST', path: `${V1}/keys/claim/`, as: null, raw: '"{usedToken}"', expect: [422, 'VALIDATION_ERROR', null] },
  ...bothWays({ name: 'claim: a token already used', method: 'POST', path: `${V1}/keys/claim/`, as: null, body: { claim_token: '{usedToken}' }, expect: [422, 'VALIDATION_ERROR', 'claim_token'], counted: true }),
]

const h = inProcess({ runtime: 'docker' })
let f: SiteFixture
beforeAll(async () => {
  f = await siteFixture(h)
}, 90_000)
afterAll(() => h.close())

describe('site feature routes: bad inputs get the error envelope and change nothing', () => {
  const rows = [...logRows, ...deployRows, ...metricsRows, ...archiveRows, ...sshRows, ...moduleRows, ...claimRows]
  it.each(rows.map((row, index) => ({ ...row, index })))('$name', (row) => checkRow(h, f, row, row.index))
})
