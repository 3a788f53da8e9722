import type { OffsiteDestination } from '../../drivers/offsite/types'
import { iso, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { OffsiteCopyRow } from '../../store/schema'
import { MANIFEST_FORMAT, offsiteKeys, type ManifestArchive, type OffsiteManifest, type OffsiteObjectRef } from './manifest'
import { reasonOf, retryAt, type Sealing, type SecretsKeySource, type SigningKey, type StoreCopySource, type TlsSource } from './ports'
import type { OffsiteCopiesRepository } from './repository'
import { signManifest } from './signing'
import { digestOf } from './streams'

/** A pending row this old without a failure is an attempt whose process stopped. */
const ABANDONED_MS = 60 * 60_000

export interface BoxCopyDeps {
  repo: OffsiteCopiesRepository
  destination: OffsiteDestination
  sealing: Sealing
  storeCopies: StoreCopySource
  tls: TlsSource
  /** The box key of the sites' secrets, carried in the manifest (manifest.ts, `secrets_key`). */
  secretsKey: SecretsKeySource
  /** Signs each manifest (signing.ts): `berth restore` accepts no copy the box did not sign. */
  signing: Pick<SigningKey, 'privateKey'>
  clock: Clock
  log: Logger
  /** What a manifest says of the box besides its copies. */
  box: { version: string; instanceId: string; sitesDomain: string }
  /** config `offsite.store_interval_seconds`, in ms. */
  intervalMs: number
}

/**
 * One point in time of the box off the box: a consistent copy of the store (VACUUM INTO,
 * zstd-compressed, sealed), the tls folder when it changed since its last copy, and the manifest
 * naming them with every copied archive (domain/offsite/manifest.ts, the format `berth restore`
 * reads). The manifest's row is made first and is the attempt's record: while it is `pending`
 * the attempt has not finished (a failure says why on it, and when it is tried again); a later
 * attempt lets the rows of a failed one go, and those of one whose process stopped (a kill -9)
 * once they are an hour old, so what they left is deleted off the box (puts are atomic: usually
 * there is nothing to delete).
 */
export class BoxCopies {
  constructor(private d: BoxCopyDeps) {}

  /** Due: never made, the last attempt failed and its retry time came, or the last is an interval old. */
  due(now: number): boolean {
    const last = this.d.repo.newest('manifest', ['pending', 'copied'])
    if (!last) return true
    if (last.status === 'pending') return last.nextAttemptAt <= now
    return now - last.madeAt >= this.d.intervalMs
  }

  /** Makes one; throws (after recording why) when any part could not be copied. Returns the manifest's key. */
  async copy(recipients: readonly string[]): Promise<string> {
    const { repo, clock } = this.d
    const now = clock.now()
    // Unfinished: failed, or left by a process that stopped (an attempt in flight in another
    // process, `berth offsite push` beside `berth serve`, is neither and is left be).
    const unfinished = repo.boxCopies(['pending']).filter((r) => r.lastError !== null || r.madeAt < now - ABANDONED_MS)
    const attempts = Math.max(0, ...unfinished.filter((r) => r.kind === 'manifest').map((r) => r.attempts))
    repo.release(unfinished.map((r) => r.id), now)
    const manifestRow = repo.insertPending({ kind: 'manifest', key: offsiteKeys.manifest(now), madeAt: now, now, attempts })
    try {
      const store = await this.copyStore(now, recipients)
      const tls = await this.copyTls(now, recipients)
      const secretsKey = await this.d.secretsKey.text()
      const text = JSON.stringify(signManifest(this.manifest(manifestRow.key, now, store, tls, secretsKey), this.d.signing.privateKey()), null, 2)
      const sealed = await this.d.sealing.sealBytes(text, recipients)
      await this.d.destination.put(manifestRow.key, new Response(sealed as Uint8Array<ArrayBuffer>).body!)
      const plain = await digestOf(new Response(text).body!)
      repo.markCopied(manifestRow.id, { ...plain, at: clock.now(), refs: tls ? [store.key, tls.key] : [store.key] })
      this.d.log.info('copied the store off the box', { manifest: manifestRow.key, store: store.key, store_bytes: store.bytes, tls: tls?.key ?? null, ms: clock.now() - now })
      return manifestRow.key
    } catch (err) {
      repo.markFailed(manifestRow.id, reasonOf(err), clock.now(), retryAt(clock.now(), attempts + 1))
      throw err
    }
  }

  /** The store's copy, put under a new key. */
  private async copyStore(now: number, recipients: readonly string[]): Promise<OffsiteObjectRef> {
    const row = this.d.repo.insertPending({ kind: 'store', key: offsiteKeys.store(now), madeAt: now, now })
    return this.putRow(row, async () => {
      const copy = await this.d.storeCopies.take()
      return { stream: copy.stream(), done: () => copy.discard() }
    }, recipients)
  }

  /**
   * The tls folder's copy: the last one when the folder's tar has the same digest (nothing
   * changed), a new one otherwise; null when the folder holds nothing.
   */
  private async copyTls(now: number, recipients: readonly string[]): Promise<OffsiteObjectRef | null> {
    const tar = await this.d.tls.tar()
    if (!tar) return null
    const { sha256 } = await digestOf(tar)
    const last = this.d.repo.newest('tls', ['copied'])
    if (last?.sha256 === sha256) return refOf(last)
    const row = this.d.repo.insertPending({ kind: 'tls', key: offsiteKeys.tls(now), madeAt: now, now })
    return this.putRow(row, async () => {
      const again = await this.d.tls.tar()
      if (!again) throw new Error('the tls folder emptied while it was copied')
      return { stream: again, done: async () => {} }
    }, recipients)
  }

  /** Seals and puts what `open` gives under the row's key; records the result on the row. */
  private async putRow(row: OffsiteCopyRow, open: () => Promise<{ stream: ReadableStream<Uint8Array>; done(): Promise<void> }>, recipients: readonly string[]): Promise<OffsiteObjectRef> {
    try {
      const source = await open()
      try {
        const sealed = await this.d.sealing.seal(source.stream, recipients)
        await this.d.destination.put(row.key, sealed.stream)
        const plain = await sealed.plain
        if (!this.d.repo.markCopied(row.id, { ...plain, at: this.d.clock.now() })) throw new Error(`the copy ${row.key} was let go while it was made`)
        return { key: row.key, ...plain }
      } finally {
        await source.done()
      }
    } catch (err) {
      this.d.repo.markFailed(row.id, reasonOf(err), this.d.clock.now(), retryAt(this.d.clock.now(), row.attempts + 1))
      throw err
    }
  }

  /** The manifest of this point in time, to be put under `key`: the copies just made, and every site with its copied archives, newest first. */
  private manifest(key: string, now: number, store: OffsiteObjectRef, tls: OffsiteObjectRef | null, secretsKey: string | null): OffsiteManifest {
    const bySite = new Map<string, ManifestArchive[]>()
    for (const a of this.d.repo.copiedArchives()) {
      const list = bySite.get(a.siteId) ?? []
      list.push({ key: a.key, sha256: a.sha256, bytes: a.bytes, id: a.archiveId, kind: a.kind, storage_key: a.storageKey, created_at: iso(a.createdAt) })
      bySite.set(a.siteId, list)
    }
    return {
      format: MANIFEST_FORMAT,
      key,
      made_at: iso(now),
      berth_version: this.d.box.version,
      instance_id: this.d.box.instanceId,
      sites_domain: this.d.box.sitesDomain,
      store,
      tls,
      secrets_key: secretsKey,
      sites: this.d.repo.sitesForManifest().map((s) => ({ id: s.id, slug: s.slug, status: s.status, archives: bySite.get(s.id) ?? [] })),
    }
  }
}

function refOf(row: OffsiteCopyRow): OffsiteObjectRef {
  return { key: row.key, sha256: row.sha256!, bytes: row.bytes! }
}
