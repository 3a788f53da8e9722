import { SITE_STATUSES } from '../../core/enums'
import { SLUG_PATTERN } from '../../core/slugs'
import { SECRETS_KEY_FILE_PATTERN } from '../../drivers/secrets/types'

/**
 * The manifest: what one point in time of the box is made of off the box. The copier
 * (domain/offsite/copier.ts) writes one after each store copy; `berth restore` reads the latest
 * (or the latest at or before `--at`) and needs nothing else: the store copy, the certificates,
 * and every archive it names, each checked against its digest as it comes back.
 *
 * Every object is sealed with age for `offsite.age_recipients` (drivers/offsite/age.ts); the
 * digests and sizes are of the plaintext (what was sealed), so a copy read back is checked after
 * it is opened. Key layout (relative to the destination's prefix):
 *
 *   store/{stamp}-{rand}.db.zst.age        the SQLite store (VACUUM INTO), zstd-compressed
 *   tls/{stamp}-{rand}.tar.age             tar of {data_dir}/tls: certs/ and acme/ (uncompressed)
 *   archives/{site_id}/{archive_id}.tar.zst.age   a backup or snapshot, the local archive's bytes
 *   manifests/{stamp}-{rand}.json.age      this document, JSON
 *
 * `{stamp}` is the UTC time as yyyymmddThhmmssmmmZ (stampOf), so keys sort by time.
 *
 * Format 2 (this one) names its own key and is signed by the box (signing.ts); format 1, made
 * before copies were signed, is read only when the hoster says so (`--accept-unsigned`).
 *
 * The box key of the sites' secrets (DATA_DIR/secrets.key, drivers/secrets) travels inside the
 * manifest itself, `secrets_key`: a few dozen bytes, sealed and signed with it, and never apart
 * from the store copy it opens. Manifests made before it (issue 39) have no such field: read as
 * null, the restore goes on and the secrets stay sealed (shown unreadable) until set again.
 */
export const MANIFEST_FORMAT = 2
/** The format of manifests made before copies were signed: no `key`, no signature. */
export const UNSIGNED_FORMAT = 1

export interface OffsiteObjectRef {
  /** Key under the destination's prefix. */
  key: string
  /** Hex SHA-256 of the plaintext (before sealing). */
  sha256: string
  /** Plaintext bytes. */
  bytes: number
}

export interface ManifestArchive extends OffsiteObjectRef {
  /** The archive's id (archives.id in the store copy). */
  id: string
  kind: 'backup' | 'snapshot' | 'deployment'
  /** The local archive store's key, `{site_id}/{archive_id}.tar.zst` (archives.storage_key). */
  storage_key: string
  created_at: string
}

export interface ManifestSite {
  id: string
  slug: string
  /** The site's status in the store copy. */
  status: string
  /**
   * Every ready archive of the site that has an off-box copy, newest first. The site's files come
   * back from the first (`latest`); the others come back so every backup and snapshot listed
   * after the restore can be restored again.
   */
  archives: ManifestArchive[]
}

export interface OffsiteManifest {
  format: typeof MANIFEST_FORMAT | typeof UNSIGNED_FORMAT
  /** Its own key under the prefix (format 2): a manifest found under another name was renamed or copied there. */
  key?: string
  /** The point in time: when the store copy was taken. Anything written after it is not in the copy. */
  made_at: string
  berth_version: string
  /** The installation id (settings.instance_id): names of containers, networks and volumes. */
  instance_id: string
  /** `sites.domain` at the time, for the restore's report. */
  sites_domain: string
  store: OffsiteObjectRef
  /** The certificates and the ACME account; null when the box had none. */
  tls: OffsiteObjectRef | null
  /**
   * The text of DATA_DIR/secrets.key (SECRETS_KEY_FILE_PATTERN) when the box had one: what opens the
   * sites' secrets in the store copy. Absent in manifests made before it was carried; null when
   * the box never sealed a secret.
   */
  secrets_key?: string | null
  sites: ManifestSite[]
}

/** `yyyymmddThhmmssmmmZ` of a time: sorts as the time does. */
export function stampOf(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:.]/g, '')
}

/** The time of a stamp made by stampOf, or null when `text` does not start with one. */
export function timeOfStamp(text: string): number | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z/.exec(text)
  if (!m) return null
  return Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!, +m[7]!)
}

const rand = () => Buffer.from(crypto.getRandomValues(new Uint8Array(4))).toString('hex')

/** The keys Berth writes (see the layout above). */
export const offsiteKeys = {
  store: (at: number) => `store/${stampOf(at)}-${rand()}.db.zst.age`,
  tls: (at: number) => `tls/${stampOf(at)}-${rand()}.tar.age`,
  manifest: (at: number) => `manifests/${stampOf(at)}-${rand()}.json.age`,
  archive: (storageKey: string) => `archives/${storageKey}.age`,
}

const STAMP = String.raw`\d{8}T\d{9}Z-[0-9a-f]{8}`
/** The exact form of every key and id a manifest holds: nothing else reaches a path. */
export const MANIFEST_PATTERNS = {
  manifestKey: new RegExp(`^manifests/${STAMP}\\.json\\.age$`),
  storeKey: new RegExp(`^store/${STAMP}\\.db\\.zst\\.age$`),
  tlsKey: new RegExp(`^tls/${STAMP}\\.tar\\.age$`),
  /** Site and archive ids: crypto.randomUUID(). */
  id: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
  slug: new RegExp(SLUG_PATTERN),
  instanceId: /^[A-Za-z0-9_-]{1,64}$/,
  sha256: /^[0-9a-f]{64}$/,
}
const KINDS: readonly string[] = ['backup', 'snapshot', 'deployment']

/** The local archive store's key of an archive, and its copy's key: the only ones a manifest may name. */
export const archiveKeysOf = (siteId: string, archiveId: string) => {
  const storageKey = `${siteId}/${archiveId}.tar.zst`
  return { storage_key: storageKey, key: offsiteKeys.archive(storageKey) }
}

/** True when `a` is an archive of the site `siteId` by its keys, its id one plain name: never a path of its own. */
export function isArchiveOf(siteId: string, a: Pick<ManifestArchive, 'id' | 'storage_key'>): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/.test(a.id) && a.storage_key === archiveKeysOf(siteId, a.id).storage_key
}

/**
 * Throws an Error naming what is wrong unless `value` is a manifest this version reads, every
 * key and id in it of its exact form (ids are UUIDs, slugs are slugs, each archive's keys are
 * `{site_id}/{archive_id}.tar.zst` and its copy's): a manifest is read before anything is
 * written, and nothing it names reaches a path unless it passed here.
 */
export function checkManifest(value: unknown): OffsiteManifest {
  const m = value as OffsiteManifest
  if (typeof m !== 'object' || m === null || Array.isArray(m)) throw new Error('The manifest is not a JSON object')
  if (m.format !== MANIFEST_FORMAT && m.format !== UNSIGNED_FORMAT) throw new Error(`The manifest is format ${String(m.format)}; this berth reads formats ${UNSIGNED_FORMAT} and ${MANIFEST_FORMAT} (use the berth version that wrote it, ${String(m.berth_version).slice(0, 40)})`)
  if (m.format === MANIFEST_FORMAT && !(typeof m.key === 'string' && MANIFEST_PATTERNS.manifestKey.test(m.key))) throw new Error(`The manifest names no key of its own, or not one of the form manifests/{stamp}-{rand}.json.age: ${show(m.key)}`)
  if (typeof m.made_at !== 'string' || !ISO.test(m.made_at) || Number.isNaN(Date.parse(m.made_at))) throw new Error('The manifest has no made_at time')
  if (typeof m.berth_version !== 'string' || typeof m.sites_domain !== 'string') throw new Error('The manifest has no berth_version or sites_domain')
  if (typeof m.instance_id !== 'string' || !MANIFEST_PATTERNS.instanceId.test(m.instance_id)) throw new Error(`The manifest's instance_id ${show(m.instance_id)} is not an installation id`)
  checkRef(m.store, MANIFEST_PATTERNS.storeKey, 'store copy')
  if (m.tls !== null) checkRef(m.tls, MANIFEST_PATTERNS.tlsKey, 'tls copy')
  if (m.secrets_key !== undefined && m.secrets_key !== null && !(typeof m.secrets_key === 'string' && SECRETS_KEY_FILE_PATTERN.test(m.secrets_key))) throw new Error('The manifest carries a secrets key that is not of the form of a secrets key file')
  if (!Array.isArray(m.sites)) throw new Error('The manifest lists no sites')
  const seen = new Set<string>()
  for (const s of m.sites) {
    if (typeof s !== 'object' || s === null) throw new Error('The manifest lists a site that is not an object')
    if (typeof s.id !== 'string' || !MANIFEST_PATTERNS.id.test(s.id)) throw new Error(`The manifest lists a site whose id ${show(s.id)} is not a site id (a UUID)`)
    if (typeof s.slug !== 'string' || !MANIFEST_PATTERNS.slug.test(s.slug)) throw new Error(`The manifest lists the site ${s.id} with the slug ${show(s.slug)}, which is not a slug`)
    if (typeof s.status !== 'string' || !(SITE_STATUSES as readonly string[]).includes(s.status)) throw new Error(`The manifest lists the site ${s.slug} with the status ${show(s.status)}`)
    if (!Array.isArray(s.archives)) throw new Error(`The manifest lists the site ${s.slug} without its archives`)
    for (const a of s.archives) {
      if (typeof a !== 'object' || a === null) throw new Error(`The manifest lists an archive of ${s.slug} that is not an object`)
      if (typeof a.id !== 'string' || !MANIFEST_PATTERNS.id.test(a.id)) throw new Error(`The manifest lists an archive of ${s.slug} whose id ${show(a.id)} is not an archive id (a UUID)`)
      if (seen.has(a.id)) throw new Error(`The manifest lists the archive ${a.id} twice`)
      seen.add(a.id)
      const keys = archiveKeysOf(s.id, a.id)
      if (a.storage_key !== keys.storage_key || a.key !== keys.key) throw new Error(`The manifest lists the archive ${a.id} of ${s.slug} under ${show(a.storage_key)} and ${show(a.key)}; its keys are ${keys.storage_key} and ${keys.key}`)
      if (!KINDS.includes(a.kind)) throw new Error(`The manifest lists the archive ${a.id} as a ${show(a.kind)}`)
      if (typeof a.created_at !== 'string' || Number.isNaN(Date.parse(a.created_at))) throw new Error(`The manifest lists the archive ${a.id} with no created_at time`)
      checkRef(a, MANIFEST_PATTERNS.id, `archive ${a.id}`, false)
    }
  }
  return m
}

/**
 * Throws unless the manifest is the one its name says: found under `key`, made at the time of
 * the key's stamp, and (format 2) naming that key itself. A manifest renamed or copied under a
 * newer name would otherwise be taken for the newest.
 */
export function checkManifestName(key: string, m: OffsiteManifest): void {
  const stamp = key.slice('manifests/'.length, 'manifests/'.length + 19)
  if (stampOf(Date.parse(m.made_at)) !== stamp) throw new Error(`it was made at ${m.made_at}, not at the time its name says (${stamp})`)
  if (m.format === MANIFEST_FORMAT && m.key !== key) throw new Error(`it says it is ${m.key}`)
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/
/** A value from the manifest for a message: JSON, its middle left out when long (a path's start and end tell most). */
const show = (v: unknown) => {
  const text = JSON.stringify(v) ?? 'nothing'
  return text.length > 120 ? `${text.slice(0, 60)}...${text.slice(-50)}` : text
}

function checkRef(r: unknown, keyPattern: RegExp, what: string, checkKey = true): void {
  const ref = r as OffsiteObjectRef
  if (typeof ref !== 'object' || ref === null) throw new Error(`The manifest names no ${what}`)
  if (checkKey && (typeof ref.key !== 'string' || !keyPattern.test(ref.key))) throw new Error(`The manifest names its ${what} under ${show(ref.key)}, not a key of its form`)
  if (typeof ref.sha256 !== 'string' || !MANIFEST_PATTERNS.sha256.test(ref.sha256) || !Number.isSafeInteger(ref.bytes) || ref.bytes < 0) throw new Error(`The manifest names its ${what} without its SHA-256 and size`)
}
