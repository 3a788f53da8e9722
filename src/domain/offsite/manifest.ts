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
 */
export const MANIFEST_FORMAT = 1

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
  format: typeof MANIFEST_FORMAT
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

/** Throws an Error naming what is wrong unless `value` is a manifest this version reads. */
export function checkManifest(value: unknown): OffsiteManifest {
  const m = value as OffsiteManifest
  const ref = (r: unknown) => typeof r === 'object' && r !== null && typeof (r as OffsiteObjectRef).key === 'string' && /^[0-9a-f]{64}$/.test((r as OffsiteObjectRef).sha256) && Number.isInteger((r as OffsiteObjectRef).bytes)
  if (typeof m !== 'object' || m === null) throw new Error('The manifest is not a JSON object')
  if (m.format !== MANIFEST_FORMAT) throw new Error(`The manifest is format ${String(m.format)}; this berth reads format ${MANIFEST_FORMAT} (use the berth version that wrote it, ${String(m.berth_version)})`)
  if (typeof m.made_at !== 'string' || Number.isNaN(Date.parse(m.made_at))) throw new Error('The manifest has no made_at time')
  if (!ref(m.store)) throw new Error('The manifest names no store copy')
  if (m.tls !== null && !ref(m.tls)) throw new Error('The manifest names a broken tls copy')
  if (!Array.isArray(m.sites) || !m.sites.every((s) => typeof s.id === 'string' && typeof s.slug === 'string' && Array.isArray(s.archives) && s.archives.every((a) => ref(a) && typeof a.storage_key === 'string'))) {
    throw new Error('The manifest lists its sites wrongly')
  }
  return m
}
