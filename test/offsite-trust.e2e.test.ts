import { Database } from 'bun:sqlite'
import { spawn, spawnSync } from 'bun'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { offsiteKeys, stampOf } from '../src/domain/offsite/manifest'
import { newSigningKey, signManifest } from '../src/domain/offsite/signing'
import { identitiesOf, openBytes, sealBytes } from '../src/drivers/offsite/age'
import { ageKeyPair } from './helpers/age-keys'
import { BINARY, startBerth, type Berth } from './helpers/binary'
import { ENGINE_SOCKET } from './helpers/engine'

/**
 * Copies off the box are authenticated (issue 36, item 6). age only encrypts: anyone who can
 * write to the bucket and reads a recipient's public key (both in the box's config) can seal a
 * manifest. The compiled binary makes real copies into a file:// bucket; then the bucket is
 * tampered with as such a person would, and `berth restore` must refuse, exit 1, say why, and
 * write nothing: a forged copy (sealed right, signed by another key), an older manifest renamed
 * to a newer name, and a manifest (signed by the box itself) naming a traversing archive id.
 * With the tampering gone, the box's own copy still restores.
 */
const scratch = mkdtempSync(join(tmpdir(), 'berth-offsite-trust-'))
const dataDir = join(scratch, 'data')
const bucket = join(scratch, 'bucket')
let keys: { identityFile: string; recipient: string }
let env: Record<string, string>
let berth: Berth
/** The public half of the box's signing key, as `berth offsite status --json` printed it. */
let signingKey = ''

beforeAll(async () => {
  mkdirSync(bucket)
  keys = ageKeyPair(scratch)
  env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root',
    BERTH_CONTAINERS_DOCKER_SOCKET: ENGINE_SOCKET, BERTH_CONTAINERS_FIREWALL: 'false', BERTH_DNS_LISTEN: 'off',
    BERTH_OFFSITE_URL: `file://${bucket}`, BERTH_OFFSITE_AGE_RECIPIENTS: keys.recipient,
  }
  berth = await startBerth({ dataDir, env })
}, 60_000)

afterAll(async () => {
  await berth?.stop()
  rmSync(scratch, { recursive: true, force: true })
}, 60_000)

/** `berth restore` from the bucket into a data folder that does not exist yet. */
async function restore(args: string[]) {
  const target = join(scratch, `target-${Math.random().toString(36).slice(2, 8)}`)
  const proc = spawn([BINARY, 'restore', '--from', `file://${bucket}`, '--identity', keys.identityFile, '--data-dir', target, ...args], { env, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, out, err, target }
}

const manifestNames = () => readdirSync(join(bucket, 'manifests')).filter((n) => n.endsWith('.json.age')).sort().map((n) => `manifests/${n}`)
const identities = () => identitiesOf(readFileSync(keys.identityFile, 'utf8'))
const openObject = async (key: string) => openBytes(new Uint8Array(readFileSync(join(bucket, key))), identities())
const openManifest = async (key: string) => JSON.parse(new TextDecoder().decode(await openObject(key))) as Record<string, unknown> & { made_at: string; key?: string; sites: unknown[] }
/** Seals `plain` for the box's recipient (a public key, in the box's config) and puts it in the bucket, as anyone with write access can. */
async function putObject(key: string, plain: Uint8Array | string): Promise<{ key: string; sha256: string; bytes: number }> {
  const bytes = typeof plain === 'string' ? new TextEncoder().encode(plain) : plain
  mkdirSync(join(bucket, key, '..'), { recursive: true })
  writeFileSync(join(bucket, key), await sealBytes(bytes, [keys.recipient]))
  return { key, sha256: new Bun.CryptoHasher('sha256').update(bytes).digest('hex'), bytes: bytes.byteLength }
}
/** The newest genuine manifest without its signature, remade for `at`: the template of what is put in the bucket. */
async function template(at: number) {
  const newest = manifestNames().at(-1)!
  const { signature: _, ...m } = await openManifest(newest)
  const key = offsiteKeys.manifest(at)
  return { key, manifest: { ...m, made_at: new Date(at).toISOString(), ...('key' in m ? { key } : {}) } }
}
const newestTime = () => Date.parse(readdirSync(join(bucket, 'manifests')).sort().at(-1)!.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)(\d{3})Z.*/, '$1-$2-$3T$4:$5:$6.$7Z'))

/** A refusal: exit 1, the message saying why, and nothing written (the target data folder never made). */
function expectRefused(r: Awaited<ReturnType<typeof restore>>, why: RegExp) {
  expect(r.code, `${r.out}\n${r.err}`).toBe(1)
  expect(r.err).toMatch(why)
  expect(r.err).toMatch(/Nothing was written\./)
  expect(existsSync(r.target), `${r.target} was made`).toBe(false)
}

describe('berth restore accepts only the copies the box signed', () => {
  it('makes copies; berth offsite status prints the signing key the hoster keeps', async () => {
    const push = spawnSync([BINARY, 'offsite', 'push', '--json', '--data-dir', dataDir], { env, stdout: 'pipe', stderr: 'pipe' })
    expect(push.exitCode, push.stderr.toString()).toBe(0)
    const status = spawnSync([BINARY, 'offsite', 'status', '--json', '--data-dir', dataDir], { env, stdout: 'pipe', stderr: 'pipe' })
    signingKey = JSON.parse(status.stdout.toString()).signing_key
    expect(signingKey).toMatch(/^ed25519:[A-Za-z0-9_-]{43}$/)
    const text = spawnSync([BINARY, 'offsite', 'status', '--data-dir', dataDir], { env, stdout: 'pipe', stderr: 'pipe' }).stdout.toString()
    expect(text).toContain(`Signing key:      ${signingKey}`)
    await berth.stop()
    expect(manifestNames().length).toBeGreaterThanOrEqual(2)
    // Without the key: a usage error that says where to find it.
    const bare = await restore([])
    expect(bare.code).toBe(2)
    expect(bare.err).toMatch(/--signing-key is required: give the "Signing key" that berth offsite status printed/)
  }, 120_000)

  it('a forged copy (sealed for the recipients, with a store of its own, signed by another key) is refused', async () => {
    const at = newestTime() + 1000
    const { key, manifest } = await template(at)
    const store = await putObject(offsiteKeys.store(at), await openObject(((manifest as Record<string, unknown>).store as { key: string }).key))
    const forged = signManifest({ ...manifest, store } as never, newSigningKey())
    await putObject(key, JSON.stringify({ ...forged, signature: { ...forged.signature, public_key: signingKey } }))
    try {
      expectRefused(await restore(['--signing-key', signingKey]), new RegExp(`Refused the manifest ${key}: its signature is not one of the signing key ${signingKey}: it was not written by the box that key belongs to, or it was changed since`))
      // Unsigned: refused too, unless the hoster says the copies predate signing.
      await putObject(key, JSON.stringify({ ...manifest, store }))
      expectRefused(await restore(['--signing-key', signingKey]), new RegExp(`Refused the manifest ${key}: it carries no signature: .* pass --accept-unsigned`))
    } finally {
      rmSync(join(bucket, key))
      rmSync(join(bucket, store.key))
    }
  }, 60_000)

  it('an older manifest renamed to a newer name is refused, not taken for the newest', async () => {
    const [oldest] = manifestNames()
    const renamed = `manifests/${stampOf(newestTime() + 1000)}-00000000.json.age`
    writeFileSync(join(bucket, renamed), readFileSync(join(bucket, oldest!)))
    try {
      const madeAt = (await openManifest(oldest!)).made_at
      expectRefused(await restore(['--signing-key', signingKey]), new RegExp(`Refused the manifest ${renamed}: it was made at ${madeAt.replace(/\./g, '\\.')}, not at the time its name says .*: it was renamed or copied under this name`))
    } finally {
      rmSync(join(bucket, renamed))
    }
  }, 60_000)

  it('a manifest signed by the box itself but naming a traversing archive id is refused, and the file it names is untouched', async () => {
    // What the id points at, through the restore's work folder: a file outside every Berth folder.
    mkdirSync(join(scratch, 'outside'), { recursive: true })
    const victim = join(scratch, 'outside', 'pwned.tar.zst')
    writeFileSync(victim, 'precious')
    const at = newestTime() + 1000
    const { key, manifest } = await template(at)
    const [siteId, archiveId] = [crypto.randomUUID(), crypto.randomUUID()]
    const object = await putObject(offsiteKeys.archive(`${siteId}/${archiveId}.tar.zst`), crypto.getRandomValues(new Uint8Array(4096)))
    const id = '../'.repeat(40) + victim.slice(1, -'.tar.zst'.length)
    const site = { id: siteId, slug: 'victim-site', status: 'active', archives: [{ ...object, id, kind: 'backup', storage_key: `${siteId}/${archiveId}.tar.zst`, created_at: new Date(at).toISOString() }] }
    const traversing = { ...manifest, sites: [...manifest.sites, site] }
    // Signed with the box's own key (from its store), as a copy of a box whose store was tampered with would be.
    const db = new Database(join(dataDir, 'berth.db'), { readonly: true })
    const boxKey = (db.query("select value from settings where key = 'offsite_signing_key'").get() as { value: string } | null)?.value
    db.close()
    await putObject(key, JSON.stringify(boxKey ? signManifest(traversing as never, boxKey) : traversing))
    try {
      expectRefused(await restore(['--signing-key', signingKey]), new RegExp(`Refused the manifest ${key}: The manifest lists an archive of victim-site whose id "(\\.\\./)+.*" is not an archive id \\(a UUID\\); berth makes no such manifest`))
      expect(readFileSync(victim, 'utf8')).toBe('precious')
      expect(readdirSync(join(scratch, 'outside'))).toEqual(['pwned.tar.zst'])
    } finally {
      rmSync(join(bucket, key))
    }
  }, 60_000)

  it('with the tampering gone, the box\'s own newest copy restores', async () => {
    const r = await restore(['--signing-key', signingKey])
    expect(r.code, `${r.out}\n${r.err}`).toBe(0)
    expect(r.out).toContain(`(${manifestNames().at(-1)}, newest of`)
    expect(existsSync(join(r.target, 'berth.db'))).toBe(true)
  }, 120_000)
})
