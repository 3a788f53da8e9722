import { Database } from 'bun:sqlite'
import { generateX25519Identity, identityToRecipient } from 'age-encryption'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { zstdCompressSync } from 'node:zlib'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { LocalArchiveStore } from '../../drivers/archives/local'
import { open, openBytes, sealBytes } from '../../drivers/offsite/age'
import { FolderDestination } from '../../drivers/offsite/folder'
import { LocalLanding } from '../../drivers/offsite/landing'
import { MANIFEST_FORMAT, offsiteKeys, stampOf, type OffsiteManifest, type OffsiteObjectRef } from './manifest'
import { BoxRestore, chooseManifest, formatSpan, RestoreFailedError, RestoreRefusedError } from './restore'
import { newSigningKey, publicKeyOf, signManifest } from './signing'

/**
 * The first half of `berth restore` on real files: a file:// bucket written as the copier writes
 * it (manifest.ts), opened with real age identities, landed by the real drivers.
 */
let root: string
let bucket: FolderDestination
let identity: string
let recipient: string
const T1 = Date.parse('2026-11-25T09:00:00Z')
const T2 = Date.parse('2026-11-25T10:00:00Z')
const S1 = '5e1f0c2a-0000-4000-8000-000000000001'
const A = ['a0000000-0000-4000-8000-000000000000', 'a0000000-0000-4000-8000-000000000001', 'a0000000-0000-4000-8000-000000000002']
/** The box's signing key; the hoster's copy of its public half is `SIGNING`. */
const BOX_KEY = newSigningKey()
const SIGNING = publicKeyOf(BOX_KEY)

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'berth-restore-'))
  mkdirSync(join(root, 'bucket'))
  bucket = new FolderDestination(join(root, 'bucket'))
  identity = await generateX25519Identity()
  recipient = await identityToRecipient(identity)
})
afterEach(() => rmSync(root, { recursive: true, force: true }))

const sha256 = (b: Uint8Array) => new Bun.CryptoHasher('sha256').update(b).digest('hex')

async function putSealed(key: string, plain: Uint8Array | string): Promise<OffsiteObjectRef> {
  const bytes = typeof plain === 'string' ? new TextEncoder().encode(plain) : plain
  await bucket.put(key, streamOf(await sealBytes(bytes, [recipient])))
  return { key, sha256: sha256(bytes), bytes: bytes.byteLength }
}

/** A store copy (an SQLite file holding `marker`), compressed as the copier does. */
function storeCopy(marker: string): Uint8Array {
  const file = join(root, `copy-${marker}.db`)
  const db = new Database(file)
  db.run('CREATE TABLE marker (v TEXT)')
  db.run('INSERT INTO marker VALUES (?)', [marker])
  db.close()
  return zstdCompressSync(readFileSync(file))
}

function tlsTar(): Uint8Array {
  const src = join(root, 'tls-src')
  mkdirSync(join(src, 'certs'), { recursive: true })
  mkdirSync(join(src, 'acme'), { recursive: true })
  writeFileSync(join(src, 'certs', 'c1.crt'), 'CERT')
  writeFileSync(join(src, 'certs', 'c1.key'), 'KEY')
  writeFileSync(join(src, 'acme', 'account.key'), 'ACCOUNT')
  chmodSync(join(src, 'certs', 'c1.key'), 0o644)
  return Bun.spawnSync(['tar', '--create', '--file', '-', '--directory', src, '.']).stdout
}

/** Seals the manifest (signed by `signer`, or unsigned with null) under `key`, as the copier puts it. */
async function putManifest(key: string, manifest: OffsiteManifest, signer: string | null = BOX_KEY): Promise<void> {
  await bucket.put(key, streamOf(await sealBytes(JSON.stringify(signer ? signManifest(manifest, signer) : manifest), [recipient])))
}

/** A bucket with a manifest at T1 (store "old") and one at T2 (store "new", two archives of site S1), both signed by the box. */
async function writeBucket(): Promise<{ old: string; latest: string; archives: Uint8Array[]; manifest: OffsiteManifest }> {
  const old = offsiteKeys.manifest(T1)
  const base = { format: MANIFEST_FORMAT as typeof MANIFEST_FORMAT, berth_version: '0.1.0', instance_id: 'inst1', sites_domain: 'sites.test', tls: null }
  await putManifest(old, { ...base, key: old, made_at: new Date(T1).toISOString(), store: await putSealed(offsiteKeys.store(T1), storeCopy('old')), sites: [] })
  const archives = [crypto.getRandomValues(new Uint8Array(70_000)), crypto.getRandomValues(new Uint8Array(50_000))]
  const refs = await Promise.all(archives.map((bytes, i) => putSealed(offsiteKeys.archive(`${S1}/${A[i]}.tar.zst`), bytes)))
  const latest = offsiteKeys.manifest(T2)
  const manifest: OffsiteManifest = {
    ...base, key: latest, made_at: new Date(T2).toISOString(),
    store: await putSealed(offsiteKeys.store(T2), storeCopy('new')),
    tls: await putSealed(offsiteKeys.tls(T2), tlsTar()),
    sites: [{ id: S1, slug: 'shop', status: 'active', archives: refs.map((r, i) => ({ ...r, id: A[i]!, kind: i ? 'snapshot' as const : 'backup' as const, storage_key: `${S1}/${A[i]}.tar.zst`, created_at: new Date(T2 - i * 1000).toISOString() })) }],
  }
  await putManifest(latest, manifest)
  return { old, latest, archives, manifest }
}

function restoreWith(ids: string[], migrated: string[] = [], trust: { publicKey: string | null; acceptUnsigned: boolean } = { publicKey: SIGNING, acceptUnsigned: false }) {
  const dataDir = join(root, 'data')
  return {
    dataDir,
    box: new BoxRestore({
      destination: bucket,
      unsealer: { open: (s) => open(s, ids), openBytes: (b) => openBytes(b, ids) },
      files: new LocalLanding(join(dataDir, 'archives', '.work')),
      archives: new LocalArchiveStore(join(dataDir, 'archives')),
      paths: { dataDir, database: join(dataDir, 'berth.db'), tls: join(dataDir, 'tls'), secretsKey: join(dataDir, 'secrets.key') },
      migrate: () => migrated,
      trust,
      clock: { now: () => T2 + 192_000 },
    }),
  }
}

const markerOf = (file: string) => {
  const db = new Database(file, { readonly: true })
  const { v } = db.query('SELECT v FROM marker').get() as { v: string }
  db.close()
  return v
}

describe('choosing the manifest', () => {
  const keys = [`manifests/${stampOf(T1)}-000000aa.json.age`, `manifests/${stampOf(T2)}-000000bb.json.age`, 'manifests/notes.txt', `manifests/${stampOf(T2 + 5)}-x.json.age`, `store/${stampOf(T2 + 1)}-000000cc.db.zst.age`]

  it('takes the newest, or the newest at or before --at; none before the first', () => {
    expect(chooseManifest(keys, null)).toBe(keys[1])
    expect(chooseManifest(keys, T2)).toBe(keys[1])
    expect(chooseManifest(keys, T2 - 1)).toBe(keys[0])
    expect(chooseManifest(keys, T1 - 1)).toBeNull()
    expect(chooseManifest([], null)).toBeNull()
  })

  it('opens the one --at names: its store comes back', async () => {
    const { old } = await writeBucket()
    const { box, dataDir } = restoreWith([identity])
    const chosen = await box.chooseManifest(T1 + 30 * 60_000)
    expect(chosen.key).toBe(old)
    expect(chosen.available).toBe(2)
    await box.landStore(chosen.manifest)
    expect(markerOf(join(dataDir, 'berth.db'))).toBe('old')
  })

  it('says when there is nothing at or before --at, and when the bucket holds no copy', async () => {
    const { box } = restoreWith([identity])
    await expect(box.chooseManifest(null)).rejects.toThrow(/holds no manifest: no copy of a box was ever completed there/)
    await writeBucket()
    await expect(box.chooseManifest(T1 - 1000)).rejects.toThrow(/no manifest made at or before 2026-11-25T08:59:59.000Z; the oldest is 2026-11-25T09:00:00.000Z/)
  })
})

describe('putting the box back', () => {
  it('lands the newest store (0600, a stale WAL dropped), the certificates (0600 in 0700) and every archive at its key', async () => {
    const { latest, archives } = await writeBucket()
    const { box, dataDir } = restoreWith([identity], ['0012_offsite'])
    await box.checkTarget(false)
    const { key, manifest } = await box.chooseManifest(null)
    expect(key).toBe(latest)
    mkdirSync(dataDir, { recursive: true })
    writeFileSync(join(dataDir, 'berth.db-wal'), 'stale')
    expect(await box.landStore(manifest)).toEqual(['0012_offsite'])
    expect(markerOf(join(dataDir, 'berth.db'))).toBe('new')
    expect(statSync(join(dataDir, 'berth.db')).mode & 0o777).toBe(0o600)
    expect(existsSync(join(dataDir, 'berth.db-wal'))).toBe(false)

    expect(await box.landTls(manifest)).toBe(true)
    expect(readFileSync(join(dataDir, 'tls', 'certs', 'c1.key'), 'utf8')).toBe('KEY')
    expect(readFileSync(join(dataDir, 'tls', 'acme', 'account.key'), 'utf8')).toBe('ACCOUNT')
    for (const f of ['certs/c1.key', 'certs/c1.crt', 'acme/account.key']) expect(statSync(join(dataDir, 'tls', f)).mode & 0o777, f).toBe(0o600)
    for (const d of ['', 'certs', 'acme']) expect(statSync(join(dataDir, 'tls', d)).mode & 0o777, d).toBe(0o700)

    const landed = await box.landArchives(manifest)
    expect(landed.map((a) => [a.archive.id, a.ok])).toEqual([[A[0], true], [A[1], true]])
    archives.forEach((bytes, i) => expect(new Uint8Array(readFileSync(join(dataDir, 'archives', S1, `${A[i]}.tar.zst`)))).toEqual(bytes))
    expect(formatSpan(box.lostMs(manifest))).toBe('3 min 12 s')
  })

  it("puts the box key of the sites' secrets back (0600) from a manifest that carries it; one made before it was carried restores without it", async () => {
    const { latest, manifest } = await writeBucket()
    const { box, dataDir } = restoreWith([identity])
    // The bucket's manifests are of before issue 39: no secrets_key field at all.
    const older = await box.chooseManifest(null)
    expect(older.manifest.secrets_key).toBeUndefined()
    expect(await box.landSecretsKey(older.manifest)).toBe(false)
    expect(existsSync(join(dataDir, 'secrets.key'))).toBe(false)
    const key = `1:${Buffer.alloc(32, 9).toString('base64')}\n`
    const newer = offsiteKeys.manifest(T2 + 1000)
    await putManifest(newer, { ...manifest, key: newer, made_at: new Date(T2 + 1000).toISOString(), secrets_key: key })
    const chosen = await box.chooseManifest(null)
    expect(chosen.key).not.toBe(latest)
    mkdirSync(dataDir, { recursive: true })
    writeFileSync(join(dataDir, 'secrets.key'), 'another box key')
    expect(await box.landSecretsKey(chosen.manifest)).toBe(true)
    expect(readFileSync(join(dataDir, 'secrets.key'), 'utf8')).toBe(key)
    expect(statSync(join(dataDir, 'secrets.key')).mode & 0o777).toBe(0o600)
    // A key that is not of the key file's form is refused with the manifest, before anything is written.
    const bad = offsiteKeys.manifest(T2 + 2000)
    await putManifest(bad, { ...manifest, key: bad, made_at: new Date(T2 + 2000).toISOString(), secrets_key: '../../etc/passwd' })
    await expect(box.chooseManifest(null)).rejects.toThrow(/secrets key that is not of the form/)
  })

  it('refuses a data folder that is not empty unless forced', async () => {
    const { box, dataDir } = restoreWith([identity])
    await box.checkTarget(false)
    mkdirSync(dataDir, { recursive: true })
    writeFileSync(join(dataDir, 'berth.db'), 'a live store')
    const refused = await box.checkTarget(false).catch((e: Error) => e)
    expect(refused).toBeInstanceOf(RestoreRefusedError)
    expect((refused as Error).message).toMatch(/data folder .*\/data is not empty \(berth\.db\).*--force/)
    await box.checkTarget(true)
  })

  it('a wrong identity: a clear error naming offsite.age_recipients, nothing written', async () => {
    await writeBucket()
    const { box, dataDir } = restoreWith([await generateX25519Identity()])
    const err = await box.chooseManifest(null).catch((e: Error) => e)
    expect(err).toBeInstanceOf(RestoreFailedError)
    expect((err as Error).message).toMatch(/^The identity file does not open the manifest manifests\/20261125T100000000Z-[0-9a-f]{8}\.json\.age \(.+\)\. Give the identity .* offsite\.age_recipients/)
    expect(existsSync(dataDir)).toBe(false)
  })

  it('a damaged archive or one that is not what was copied is skipped and reported; the rest comes back', async () => {
    await writeBucket()
    const { box, dataDir } = restoreWith([identity])
    const { manifest } = await box.chooseManifest(null)
    // A0: a byte flipped in the sealed object; A2: the manifest records another digest.
    const sealed = join(root, 'bucket', manifest.sites[0]!.archives[0]!.key)
    const bytes = readFileSync(sealed)
    bytes[bytes.length - 100] ^= 0xff
    writeFileSync(sealed, bytes)
    const third = { ...manifest.sites[0]!.archives[1]!, id: A[2]!, storage_key: `${S1}/${A[2]}.tar.zst` }
    manifest.sites[0]!.archives.push({ ...third, sha256: 'f'.repeat(64) })
    const landed = await box.landArchives(manifest)
    expect(landed.map((a) => [a.archive.id, a.ok])).toEqual([[A[0], false], [A[1], true], [A[2], false]])
    expect(landed[0]!.problem).toMatch(new RegExp(`^archives/${S1}/${A[0]}\\.tar\\.zst\\.age is damaged: it does not open whole`))
    expect(landed[2]!.problem).toMatch(new RegExp(`^archives/${S1}/${A[1]}\\.tar\\.zst\\.age is not what was copied: 50000 bytes with SHA-256 [0-9a-f]{12}\\.\\.\\., the manifest says 50000 bytes with ffffffffffff`))
    expect(existsSync(join(dataDir, 'archives', S1, `${A[0]}.tar.zst`))).toBe(false)
    expect(existsSync(join(dataDir, 'archives', S1, `${A[1]}.tar.zst`))).toBe(true)
    expect(existsSync(join(dataDir, 'archives', S1, `${A[2]}.tar.zst`))).toBe(false)
  })

  it('a store copy that is not what was copied stops the restore before berth.db is written', async () => {
    await writeBucket()
    const { box, dataDir } = restoreWith([identity])
    const { manifest } = await box.chooseManifest(null)
    const err = await box.landStore({ ...manifest, store: { ...manifest.store, bytes: manifest.store.bytes + 1 } }).catch((e: Error) => e)
    expect(err).toBeInstanceOf(RestoreFailedError)
    expect((err as Error).message).toMatch(/^the store copy: store\/.* is not what was copied: .*Pick an earlier manifest with --at\.$/)
    expect(existsSync(join(dataDir, 'berth.db'))).toBe(false)
  })
})

describe('who wrote the copy: refused before anything is written', () => {
  /** The restore of the newest manifest fails with a message matching `why`, and the data folder was never made. */
  async function refused(why: RegExp, trust?: { publicKey: string | null; acceptUnsigned: boolean }) {
    const { box, dataDir } = restoreWith([identity], [], trust)
    const err = await box.chooseManifest(null).catch((e: Error) => e)
    expect(err).toBeInstanceOf(RestoreFailedError)
    expect((err as Error).message).toMatch(why)
    expect((err as Error).message).toMatch(/Nothing was written\.$/)
    expect(existsSync(dataDir)).toBe(false)
  }

  it('a forged copy (sealed for the recipients, signed by another key, even one naming the box key) is refused', async () => {
    const { manifest } = await writeBucket()
    const key = offsiteKeys.manifest(T2 + 1000)
    const forged = { ...manifest, key, made_at: new Date(T2 + 1000).toISOString(), store: await putSealed(offsiteKeys.store(T2 + 1000), storeCopy('forged')) }
    await putManifest(key, forged, newSigningKey())
    await refused(new RegExp(`^Refused the manifest ${key}: its signature is not one of the signing key ${SIGNING} \\(it names the key ed25519:`))
    const claimed = signManifest(forged, newSigningKey())
    await bucket.put(key, streamOf(await sealBytes(JSON.stringify({ ...claimed, signature: { ...claimed.signature, public_key: SIGNING } }), [recipient])))
    await refused(/its signature is not one of the signing key ed25519:\S+: it was not written by the box/)
    // The box's own signature over another document: a changed manifest.
    const signed = signManifest({ ...forged, store: manifest.store }, BOX_KEY)
    await bucket.put(key, streamOf(await sealBytes(JSON.stringify({ ...signed, store: forged.store }), [recipient])))
    await refused(/its signature is not one of the signing key .*or it was changed since/)
  })

  it('an older manifest renamed (or copied) to a newer name is refused, never taken for the newest', async () => {
    const { old, latest } = await writeBucket()
    const renamed = `manifests/${stampOf(T2 + 1000)}-00000000.json.age`
    writeFileSync(join(root, 'bucket', renamed), readFileSync(join(root, 'bucket', old)))
    await refused(new RegExp(`^Refused the manifest ${renamed}: it was made at 2026-11-25T09:00:00.000Z, not at the time its name says \\(20261125T100001000Z\\): it was renamed or copied under this name .* pick the copy you want with --at`))
    rmSync(join(root, 'bucket', renamed))
    // The same time, another name: the signed manifest names its own.
    const twin = `manifests/${stampOf(T2)}-ffffffff.json.age`
    writeFileSync(join(root, 'bucket', twin), readFileSync(join(root, 'bucket', latest)))
    await refused(new RegExp(`^Refused the manifest ${twin}: it says it is ${latest}: it was renamed`))
    rmSync(join(root, 'bucket', twin))
    expect((await restoreWith([identity]).box.chooseManifest(null)).key).toBe(latest)
  })

  it('a manifest signed by the box but naming a traversing id or key is refused', async () => {
    const { manifest } = await writeBucket()
    const site = manifest.sites[0]!
    const archive = site.archives[0]!
    const bad: [Partial<typeof archive> | { slug: string }, RegExp][] = [
      [{ id: '../../../../../tmp/x' }, /whose id "\.\.\/\.\.\/.*" is not an archive id \(a UUID\)/],
      [{ storage_key: `../../../../tmp/${A[0]}.tar.zst` }, /under "\.\.\/.*"; its keys are/],
      [{ key: '../../etc/passwd' }, /its keys are/],
      [{ slug: '../shop' }, /with the slug "\.\.\/shop", which is not a slug/],
    ]
    for (const [change, why] of bad) {
      const sites = 'slug' in change ? [{ ...site, ...change }] : [{ ...site, archives: [{ ...archive, ...change }] }]
      await putManifest(manifest.key!, { ...manifest, sites } as OffsiteManifest)
      await refused(why)
    }
    await putManifest(manifest.key!, { ...manifest, store: { ...manifest.store, key: 'store/../../x' } })
    await refused(/names its store copy under "store\/\.\.\/\.\.\/x", not a key of its form/)
  })

  it('a manifest made before copies were signed: refused unless --accept-unsigned; a signed one needs the key', async () => {
    const { manifest } = await writeBucket()
    const { key: _key, ...legacy } = manifest
    await putManifest(manifest.key!, { ...legacy, format: 1 }, null)
    await refused(/carries no signature: .*pass --accept-unsigned/)
    const { box } = restoreWith([identity], [], { publicKey: SIGNING, acceptUnsigned: true })
    expect(await box.chooseManifest(null)).toMatchObject({ key: manifest.key, signed: false, manifest: { format: 1, made_at: manifest.made_at } })
    // A format-2 manifest (always signed) whose signature was taken off.
    await putManifest(manifest.key!, manifest, null)
    await refused(/it is format 2, which berth always signs, and carries no signature: it was taken off/, { publicKey: SIGNING, acceptUnsigned: true })
    await putManifest(manifest.key!, manifest)
    await refused(/it is signed, and no --signing-key was given to check it/, { publicKey: null, acceptUnsigned: true })
    expect(await restoreWith([identity]).box.chooseManifest(null)).toMatchObject({ key: manifest.key, signed: true })
  })
})

describe('the work folder', () => {
  it('takes one plain file name: a name that would climb out of it is refused and nothing is written', async () => {
    const work = join(root, 'data', 'archives', '.work')
    const landing = new LocalLanding(work)
    for (const name of ['../x.tar.zst', 'restore-../../../x.tar.zst', '/tmp/x', '.hidden', 'a/b']) {
      await expect(landing.receive(streamOf(new Uint8Array([1, 2, 3])), name), name).rejects.toThrow(/is not a work file name/)
    }
    expect(existsSync(join(root, 'data'))).toBe(false)
    expect((await landing.receive(streamOf(new Uint8Array([1])), `restore-${A[0]}.tar.zst`)).bytes).toBe(1)
  })
})

describe('formatSpan', () => {
  it('gives the two largest units', () => {
    expect([0, 400, 12_000, 192_000, 3_600_000, 7_500_000, 90_061_000].map(formatSpan)).toEqual(['0 s', '0 s', '12 s', '3 min 12 s', '1 h', '2 h 5 min', '1 d 1 h'])
  })
})

/** A byte array as a stream (what a destination's put takes). */
const streamOf = (b: Uint8Array) => new Response(b as Uint8Array<ArrayBuffer>).body!
