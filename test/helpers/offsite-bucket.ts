import { Database } from 'bun:sqlite'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { zstdCompressSync } from 'node:zlib'
import { MANIFEST_FORMAT, offsiteKeys, type ManifestSite, type OffsiteManifest, type OffsiteObjectRef } from '../../src/domain/offsite/manifest'
import { sealBytes } from '../../src/drivers/offsite/age'
import { FolderDestination } from '../../src/drivers/offsite/folder'

/**
 * STAND-IN FOR THE COPIER, for the restore tests only: writes into a file:// folder what the
 * copier (domain/offsite/copier*, issue 25 part COPIER, built at the same time) writes for one
 * point in time, following src/domain/offsite/manifest.ts: the store (VACUUM INTO of the running
 * Berth's berth.db), zstd-compressed and sealed; a tar of {data_dir}/tls, sealed; every ready
 * archive's local .tar.zst, sealed; and the manifest naming them, sealed. Digests and sizes are
 * of the plaintext. Once the copier is merged, the drill sets offsite.url=file:///... and waits
 * for `berth offsite status` instead, and this file goes.
 */
export async function writeOffsiteCopy(opts: { dataDir: string; bucket: string; recipients: string[]; archivesDir?: string; version?: string }): Promise<{ key: string; manifest: OffsiteManifest }> {
  const dest = new FolderDestination(opts.bucket)
  const work = mkdtempSync(join(tmpdir(), 'berth-offsite-copy-'))
  try {
    const madeAt = Date.now()
    const copy = join(work, 'berth.db')
    const live = new Database(join(opts.dataDir, 'berth.db'))
    live.run('VACUUM INTO ?', [copy])
    live.close()
    const db = new Database(copy, { readonly: true })
    const instanceId = (db.query("SELECT value FROM settings WHERE key = 'instance_id'").get() as { value: string }).value
    const siteRows = db.query("SELECT id, slug, status FROM sites WHERE status != 'deleted' ORDER BY created_at").all() as { id: string; slug: string; status: string }[]
    const archiveRows = db.query("SELECT id, site_id, kind, storage_key, created_at FROM archives WHERE status = 'ready' ORDER BY created_at DESC").all() as { id: string; site_id: string; kind: 'backup' | 'snapshot'; storage_key: string; created_at: number }[]
    db.close()

    const put = async (key: string, plain: Uint8Array): Promise<OffsiteObjectRef> => {
      await dest.put(key, streamOf(await sealBytes(plain, opts.recipients)))
      return { key, sha256: new Bun.CryptoHasher('sha256').update(plain).digest('hex'), bytes: plain.byteLength }
    }
    const store = await put(offsiteKeys.store(madeAt), zstdCompressSync(readFileSync(copy)))
    const tlsDir = join(opts.dataDir, 'tls')
    const tls = existsSync(tlsDir) ? await put(offsiteKeys.tls(madeAt), tarOf(tlsDir)) : null
    const archivesDir = opts.archivesDir ?? join(opts.dataDir, 'archives')
    const sites: ManifestSite[] = []
    for (const s of siteRows) {
      const archives = []
      for (const a of archiveRows.filter((r) => r.site_id === s.id)) {
        const ref = await put(offsiteKeys.archive(a.storage_key), readFileSync(join(archivesDir, a.storage_key)))
        archives.push({ ...ref, id: a.id, kind: a.kind, storage_key: a.storage_key, created_at: new Date(a.created_at).toISOString() })
      }
      sites.push({ id: s.id, slug: s.slug, status: s.status, archives })
    }
    const manifest: OffsiteManifest = { format: MANIFEST_FORMAT, made_at: new Date(madeAt).toISOString(), berth_version: opts.version ?? 'test', instance_id: instanceId, sites_domain: 'localhost', store, tls, sites }
    const key = offsiteKeys.manifest(madeAt)
    await dest.put(key, streamOf(await sealBytes(JSON.stringify(manifest), opts.recipients)))
    return { key, manifest }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/** An uncompressed tar of the folder's contents (certs/ and acme/). */
function tarOf(dir: string): Uint8Array {
  const p = Bun.spawnSync(['tar', '--create', '--file', '-', '--directory', dir, '.'], { stdout: 'pipe', stderr: 'pipe' })
  if (p.exitCode !== 0) throw new Error(`tar of ${dir}: ${p.stderr.toString()}`)
  return p.stdout
}

/** An age key pair from Debian's age-keygen: the identity file's path and the public key. */
export function ageKeyPair(dir: string): { identityFile: string; recipient: string } {
  const identityFile = join(dir, `id-${Math.random().toString(36).slice(2, 8)}.txt`)
  const p = Bun.spawnSync(['age-keygen', '-o', identityFile], { stdout: 'pipe', stderr: 'pipe' })
  if (p.exitCode !== 0) throw new Error(`age-keygen: ${p.stderr.toString()}`)
  const recipient = /age1[0-9a-z]+/.exec(readFileSync(identityFile, 'utf8'))?.[0]
  if (!recipient) throw new Error('age-keygen wrote no public key')
  return { identityFile, recipient }
}

/** A byte array as a stream (what a destination's put takes). */
const streamOf = (b: Uint8Array) => new Response(b as Uint8Array<ArrayBuffer>).body!
