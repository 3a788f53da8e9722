import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { checkManifest, type OffsiteManifest } from '../../src/domain/offsite/manifest'
import { identitiesOf, openBytes } from '../../src/drivers/offsite/age'

/** An age key pair from Debian's age-keygen, as a hoster makes one: the identity file's path and the public key. */
export function ageKeyPair(dir: string): { identityFile: string; recipient: string } {
  const identityFile = join(dir, `id-${Math.random().toString(36).slice(2, 8)}.txt`)
  const p = Bun.spawnSync(['age-keygen', '-o', identityFile], { stdout: 'pipe', stderr: 'pipe' })
  if (p.exitCode !== 0) throw new Error(`age-keygen: ${p.stderr.toString()}`)
  const recipient = /age1[0-9a-z]+/.exec(readFileSync(identityFile, 'utf8'))?.[0]
  if (!recipient) throw new Error('age-keygen wrote no public key')
  return { identityFile, recipient }
}

/** The newest manifest in a file:// bucket, opened with the identity file. */
export async function latestManifest(bucket: string, identityFile: string): Promise<{ key: string; manifest: OffsiteManifest }> {
  const names = readdirSync(join(bucket, 'manifests')).filter((n) => n.endsWith('.json.age')).sort()
  const name = names.at(-1)
  if (!name) throw new Error(`No manifest in ${bucket}`)
  const plain = await openBytes(new Uint8Array(readFileSync(join(bucket, 'manifests', name))), identitiesOf(readFileSync(identityFile, 'utf8')))
  return { key: `manifests/${name}`, manifest: checkManifest(JSON.parse(new TextDecoder().decode(plain))) }
}
