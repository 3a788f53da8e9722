import { Decrypter, Encrypter, generateX25519Identity, identityToRecipient } from 'age-encryption'
import { openStream, sealStream } from './age-stream'

/**
 * Everything that leaves the box is sealed in the age format (age-encryption.org/v1) for the
 * hoster's public keys, `offsite.age_recipients`; only an identity file kept off the box opens
 * it, with Berth (`berth restore --identity FILE`) or with the `age` CLI
 * (`age -d -i FILE object.age`). Streams both ways: memory stays bounded (64 KiB chunks). The
 * headers are age-encryption's; the payload of a stream is ./age-stream.ts (libsodium).
 */

/** A plaintext stream sealed for `recipients`, with the SHA-256 and size of the plaintext once it has been read through. */
export interface Sealed {
  stream: ReadableStream<Uint8Array>
  /** Resolves when the whole plaintext went through: its hex SHA-256 and its byte count. */
  plain: Promise<{ sha256: string; bytes: number }>
}

/** Seals `plain` for every recipient (age1... public keys). */
export async function seal(plain: ReadableStream<Uint8Array>, recipients: readonly string[]): Promise<Sealed> {
  if (recipients.length === 0) throw new Error('No age recipient: set offsite.age_recipients')
  const digest = digestTap()
  const stream = await sealStream(plain.pipeThrough(digest.tap), recipients)
  return { stream, plain: digest.done }
}

/** Seals a small value (a manifest) whole. */
export async function sealBytes(plain: Uint8Array | string, recipients: readonly string[]): Promise<Uint8Array> {
  const e = new Encrypter()
  for (const r of recipients) e.addRecipient(r)
  return e.encrypt(plain)
}

/**
 * Opens a sealed stream with the identities (`AGE-SECRET-KEY-1...`). The header is checked before
 * this resolves (a wrong identity throws here); a damaged or truncated body errors the stream.
 */
export async function open(sealed: ReadableStream<Uint8Array>, identities: readonly string[]): Promise<ReadableStream<Uint8Array>> {
  return openStream(sealed, identities)
}

/** Opens a small sealed value whole. */
export async function openBytes(sealed: Uint8Array, identities: readonly string[]): Promise<Uint8Array> {
  const d = new Decrypter()
  for (const i of identities) d.addIdentity(i)
  return d.decrypt(sealed)
}

/**
 * The identities of an age identity file (as `age-keygen` writes it): every line that starts
 * with AGE-SECRET-KEY-, comments and blank lines aside. Throws when there is none.
 */
export function identitiesOf(text: string): string[] {
  const found = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => /^AGE-SECRET-KEY-(PQ-)?1[0-9A-Z]+$/.test(l))
  if (found.length === 0) throw new Error('The identity file holds no age identity (a line starting with AGE-SECRET-KEY-1, as age-keygen writes)')
  return found
}

/**
 * A new X25519 identity (`AGE-SECRET-KEY-1...`): the box's own, which every copy is also sealed
 * for so the daily drill can read one back. X25519 rather than the post-quantum hybrid, which
 * age refuses to mix with the hoster's X25519 recipients in one file.
 */
export function newIdentity(): Promise<string> {
  return generateX25519Identity()
}

/** The recipient (`age1...`) of an identity. */
export function recipientOf(identity: string): Promise<string> {
  return identityToRecipient(identity)
}

/** A pass-through stream that hashes (SHA-256) and counts what goes through it. */
export function digestTap(): { tap: TransformStream<Uint8Array, Uint8Array>; done: Promise<{ sha256: string; bytes: number }> } {
  const hash = new Bun.CryptoHasher('sha256')
  let bytes = 0
  let resolve!: (v: { sha256: string; bytes: number }) => void
  const done = new Promise<{ sha256: string; bytes: number }>((res) => (resolve = res))
  const tap = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      hash.update(chunk)
      bytes += chunk.byteLength
      controller.enqueue(chunk)
    },
    flush() {
      resolve({ sha256: hash.digest('hex'), bytes })
    },
  })
  return { tap, done }
}
