import type { ArchiveStore } from '../../drivers/archives/types'
import type { OffsiteDestination } from '../../drivers/offsite/types'
import type { Clock } from '../../lib/clock'
import { checkManifest, checkManifestName, MANIFEST_PATTERNS, timeOfStamp, UNSIGNED_FORMAT, type ManifestArchive, type OffsiteManifest, type OffsiteObjectRef } from './manifest'
import { ManifestSignatureError, verifyManifest } from './signing'

/**
 * `berth restore`, first half: the box's state comes back from its copies off the box. The
 * manifest of the chosen point in time is opened with the hoster's identity, then the store copy
 * (berth.db), the certificates and every archive it names are fetched, opened, checked against
 * the digest the manifest records, and put in place. The second half (restore-sites.ts) brings
 * the sites' containers and files back once the store is there.
 *
 * Nothing here touches a file or the network: the destination, the age identity and the files
 * on this box come in as the interfaces below (drivers/offsite/landing.ts and age.ts, wired by
 * compose/restore.ts).
 */

/** Opens what was sealed for the hoster's age recipients, with their identity (drivers/offsite/age.ts). */
export interface Unsealer {
  /** Throws when the identity is not one of the recipients; a damaged body errors the stream. */
  open(sealed: ReadableStream<Uint8Array>): Promise<ReadableStream<Uint8Array>>
  openBytes(sealed: Uint8Array): Promise<Uint8Array>
}

/** A plaintext written to a work file, with its SHA-256 and size. */
export interface Received {
  file: string
  sha256: string
  bytes: number
}

/** The files on this box a restore writes (drivers/offsite/landing.ts). */
export interface RestoreFiles {
  /** The names in `dir`; none when it does not exist. */
  entries(dir: string): Promise<string[]>
  /** Writes the stream to the work file `name` (0600) and hashes it on the way. */
  receive(plain: ReadableStream<Uint8Array>, name: string): Promise<Received>
  /** Decompresses (zstd) the store copy into `database` (0600), replacing it and dropping a stale -wal and -shm. */
  installStore(file: string, database: string): Promise<void>
  /** Replaces the folder `dir` with the tar's contents: folders 0700, files 0600. */
  installTls(file: string, dir: string): Promise<void>
  /** Writes `text` to `file` (0600), whole or not at all, replacing what was there. */
  installSecretsKey(text: string, file: string): Promise<void>
  /** Removes a work file; a missing one is no error. */
  discard(file: string): Promise<void>
}

export interface BoxRestoreDeps {
  destination: OffsiteDestination
  unsealer: Unsealer
  files: RestoreFiles
  /** The local archive store (`archives.dir`), where each archive goes at its storage_key. */
  archives: Pick<ArchiveStore, 'put'>
  paths: { dataDir: string; database: string; tls: string; secretsKey: string }
  /**
   * Whose copies are accepted: manifests signed by `publicKey` (`ed25519:...`, from `berth offsite
   * status`), and unsigned ones (made before copies were signed) only with `acceptUnsigned`.
   */
  trust: { publicKey: string | null; acceptUnsigned: boolean }
  /** Migrates the restored store when this binary is newer; the ids applied. */
  migrate(): string[]
  clock: Clock
}

/** Refused before anything was written (a data folder in use, no manifest at that time): exit 2 or 1 as the caller says. */
export class RestoreRefusedError extends Error {}

/** What stopped the restore (a wrong identity, a damaged store copy). Nothing of the sites came back. */
export class RestoreFailedError extends Error {}

/** The manifest chosen, opened and checked. */
export interface ChosenManifest {
  key: string
  manifest: OffsiteManifest
  /** How many manifests the destination holds. */
  available: number
  /** False for a manifest made before copies were signed, accepted with --accept-unsigned. */
  signed: boolean
}

/** An archive that came back, or why it did not. */
export interface ArchiveLanding {
  siteId: string
  archive: ManifestArchive
  ok: boolean
  /** Why it was skipped: a digest or size that differs, an object that is missing or will not open. */
  problem: string | null
}

const MANIFESTS = 'manifests/'

/**
 * The key of the newest manifest made at or before `at` (ms), or the newest of all when `at` is
 * null; null when none qualifies. The time is the stamp of the key (offsiteKeys.manifest), so
 * choosing costs one listing and no download; keys not of that exact form are not Berth's. The
 * name is only a hint: the manifest chosen must say, signed, that it was made at that time under
 * that name (BoxRestore.chooseManifest), so a renamed older one is refused, never taken.
 */
export function chooseManifest(keys: readonly string[], at: number | null): string | null {
  let best: { key: string; time: number } | null = null
  for (const key of keys) {
    if (!MANIFEST_PATTERNS.manifestKey.test(key)) continue
    const time = timeOfStamp(key.slice(MANIFESTS.length))
    if (time === null || (at !== null && time > at)) continue
    if (!best || time > best.time || (time === best.time && key > best.key)) best = { key, time }
  }
  return best?.key ?? null
}

/** "3 min 12 s", "2 h 5 min", "4 d", "0 s": how long `ms` is, in its two largest units. */
export function formatSpan(ms: number): string {
  const units: [string, number][] = [['d', 86_400], ['h', 3600], ['min', 60], ['s', 1]]
  const total = Math.max(0, Math.round(ms / 1000))
  const i = units.findIndex(([, size]) => total >= size)
  if (i === -1) return '0 s'
  const [name, size] = units[i]!
  const major = Math.floor(total / size)
  const next = units[i + 1]
  const minor = next ? Math.floor((total - major * size) / next[1]) : 0
  return minor > 0 ? `${major} ${name} ${minor} ${next![0]}` : `${major} ${name}`
}

export class BoxRestore {
  constructor(private d: BoxRestoreDeps) {}

  /**
   * Refuses a data folder that holds anything unless `force`: a restore replaces the store, and
   * a folder in use is another box's (or this box's own, still running).
   */
  async checkTarget(force: boolean): Promise<void> {
    const found = await this.d.files.entries(this.d.paths.dataDir)
    if (found.length === 0 || force) return
    const shown = found.slice(0, 5).join(', ') + (found.length > 5 ? ', ...' : '')
    throw new RestoreRefusedError(`The data folder ${this.d.paths.dataDir} is not empty (${shown}). A restore replaces its store: stop berth, and restore into an empty folder (--data-dir DIR), or pass --force to overwrite berth.db, tls/ and the archives it names.`)
  }

  /** Lists the manifests, picks the newest at or before `at` (ms; null: the newest), opens and checks it. */
  async chooseManifest(at: number | null): Promise<ChosenManifest> {
    const listed = (await this.d.destination.list(MANIFESTS)).map((o) => o.key)
    const key = chooseManifest(listed, at)
    const where = this.d.destination.describe
    if (!key) {
      if (listed.length === 0) throw new RestoreRefusedError(`${where} holds no manifest: no copy of a box was ever completed there (check the URL and prefix).`)
      throw new RestoreRefusedError(`${where} holds no manifest made at or before ${new Date(at!).toISOString()}; the oldest is ${oldestTime(listed)}.`)
    }
    const sealed = new Uint8Array(await new Response(await this.d.destination.get(key)).arrayBuffer())
    let plain: Uint8Array
    try {
      plain = await this.d.unsealer.openBytes(sealed)
    } catch (err) {
      throw new RestoreFailedError(`The identity file does not open the manifest ${key} (${(err as Error).message}). Give the identity (age-keygen's file, AGE-SECRET-KEY-1...) whose public key is in offsite.age_recipients of the box that made the copy.`)
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(new TextDecoder().decode(plain))
    } catch (err) {
      throw new RestoreFailedError(`The manifest ${key} cannot be read: ${(err as Error).message}. Pick an earlier one with --at (before ${key.slice(MANIFESTS.length, MANIFESTS.length + 19)}).`)
    }
    const refuse = (why: string) => new RestoreFailedError(`Refused the manifest ${key}: ${why}. Nothing was written.`)
    let verified: ReturnType<typeof verifyManifest>
    try {
      verified = verifyManifest(parsed, this.d.trust)
    } catch (err) {
      if (err instanceof ManifestSignatureError) throw refuse(`${err.message}. Anyone who can write to ${where} and read offsite.age_recipients can seal a copy; only the box signs one. Check --signing-key, or pick an earlier copy with --at`)
      throw err
    }
    let manifest: OffsiteManifest
    try {
      manifest = checkManifest(verified.manifest)
    } catch (err) {
      throw refuse(`${(err as Error).message}; berth makes no such manifest`)
    }
    if (!verified.signed && manifest.format !== UNSIGNED_FORMAT) throw refuse(`it is format ${manifest.format}, which berth always signs, and carries no signature: it was taken off`)
    try {
      checkManifestName(key, manifest)
    } catch (err) {
      throw refuse(`${(err as Error).message}: it was renamed or copied under this name (anyone who can write to ${where} can), so it is not the newest copy. Remove that object, or pick the copy you want with --at`)
    }
    return { key, manifest, available: listed.filter((k) => MANIFEST_PATTERNS.manifestKey.test(k)).length, signed: verified.signed }
  }

  /** The store copy into berth.db, checked; then migrated when this binary is newer. The ids of the migrations applied. */
  async landStore(m: OffsiteManifest): Promise<string[]> {
    const received = await this.fetch(m.store, 'restore-store.db.zst')
    try {
      this.requireDigest(m.store, received, 'the store copy')
      await this.d.files.installStore(received.file, this.d.paths.database)
    } finally {
      await this.d.files.discard(received.file)
    }
    return this.d.migrate()
  }

  /** The certificates and the ACME account into {data_dir}/tls; false when the copy has none. */
  async landTls(m: OffsiteManifest): Promise<boolean> {
    if (!m.tls) return false
    const received = await this.fetch(m.tls, 'restore-tls.tar')
    try {
      this.requireDigest(m.tls, received, 'the certificates copy')
      await this.d.files.installTls(received.file, this.d.paths.tls)
    } finally {
      await this.d.files.discard(received.file)
    }
    return true
  }

  /**
   * The box key of the sites' secrets into DATA_DIR/secrets.key; false when the copy carries none
   * (the box never sealed a secret, or the manifest was made before the key was carried: the
   * secrets in the store then stay sealed, shown unreadable, until they are set again). A key file
   * already in the data folder is replaced only by one from the copy: it is the copy's store the
   * key must open.
   */
  async landSecretsKey(m: OffsiteManifest): Promise<boolean> {
    if (typeof m.secrets_key !== 'string') return false
    await this.d.files.installSecretsKey(m.secrets_key, this.d.paths.secretsKey)
    return true
  }

  /**
   * Every archive the manifest names into the local archive store, at its storage_key. An
   * archive that is missing, will not open, or differs from its digest is skipped and reported;
   * the others still come back. `onArchive` hears of each as it is done.
   */
  async landArchives(m: OffsiteManifest, onArchive: (a: ArchiveLanding) => void = () => {}): Promise<ArchiveLanding[]> {
    const landed: ArchiveLanding[] = []
    for (const site of m.sites) {
      for (const archive of site.archives) {
        let problem: string | null = null
        try {
          const received = await this.fetch(archive, `restore-${archive.id}.tar.zst`)
          try {
            problem = digestProblem(archive, received)
            if (!problem) await this.d.archives.put(archive.storage_key, received.file)
          } finally {
            await this.d.files.discard(received.file)
          }
        } catch (err) {
          problem = (err as Error).message
        }
        const result = { siteId: site.id, archive, ok: problem === null, problem }
        landed.push(result)
        onArchive(result)
      }
    }
    return landed
  }

  /** How long before now the copy was made: what is lost. */
  lostMs(m: OffsiteManifest): number {
    return this.d.clock.now() - Date.parse(m.made_at)
  }

  /** Downloads and opens one object into a work file; a damaged object throws naming its key. */
  private async fetch(ref: OffsiteObjectRef, name: string): Promise<Received> {
    const sealed = await this.d.destination.get(ref.key)
    let plain: ReadableStream<Uint8Array>
    try {
      plain = await this.d.unsealer.open(sealed)
    } catch (err) {
      await sealed.cancel().catch(() => {})
      throw new Error(`${ref.key} does not open with the identity (${(err as Error).message})`)
    }
    try {
      return await this.d.files.receive(plain, name)
    } catch (err) {
      throw new Error(`${ref.key} is damaged: it does not open whole (${(err as Error).message})`)
    }
  }

  private requireDigest(ref: OffsiteObjectRef, got: Received, what: string): void {
    const problem = digestProblem(ref, got)
    if (problem) throw new RestoreFailedError(`${what}: ${problem}. Pick an earlier manifest with --at.`)
  }
}

/** Null when `got` is the plaintext `ref` records, else what differs. */
function digestProblem(ref: OffsiteObjectRef, got: Received): string | null {
  if (got.sha256 === ref.sha256 && got.bytes === ref.bytes) return null
  return `${ref.key} is not what was copied: ${got.bytes} bytes with SHA-256 ${got.sha256.slice(0, 12)}..., the manifest says ${ref.bytes} bytes with ${ref.sha256.slice(0, 12)}...`
}

function oldestTime(keys: string[]): string {
  const times = keys.filter((k) => MANIFEST_PATTERNS.manifestKey.test(k)).map((k) => timeOfStamp(k.slice(MANIFESTS.length))).filter((t): t is number => t !== null)
  return times.length ? new Date(Math.min(...times)).toISOString() : 'unknown'
}
