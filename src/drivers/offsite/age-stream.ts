import { hkdfSync, randomBytes } from 'node:crypto'
import { Decrypter, Encrypter } from 'age-encryption'
import sodium from 'libsodium-wrappers'

/**
 * The payload of an age file (age-encryption.org/v1, "Payload"), sealed and opened with
 * libsodium's ChaCha20-Poly1305 (WebAssembly) instead of age-encryption's pure-JavaScript one:
 * 340 against 160 MB/s here, and sealing is what bounds a copy off the box and a restore
 * (docs/benchmarks.md, "Copies off the box"). The header, where the keys are, stays with
 * age-encryption: sealing asks it for a header over an empty file while a recipient of ours
 * notes the file key it wraps; opening hands it the header to check and unwrap
 * (Decrypter.decryptHeader). What this file does is the format's STREAM:
 *
 *   nonce (16 random bytes) | chunk 0 | chunk 1 | ... | last chunk
 *   key    = HKDF-SHA-256(ikm = file key, salt = nonce, info = "payload"), 32 bytes
 *   chunk  = ChaCha20-Poly1305(key, counter as 11 bytes big-endian | last ? 1 : 0, 64 KiB of plaintext)
 *
 * Every chunk holds 64 KiB but the last, which holds 1 to 64 KiB (0 only for an empty file).
 * Debian's `age` opens what this seals and this opens what `age` seals, at every size around the
 * chunk boundaries (age-stream.test.ts).
 */

const CHUNK = 64 * 1024
const TAG = 16
const SEALED_CHUNK = CHUNK + TAG
/** The longest header read before giving up: each recipient's stanza is ~100 bytes. */
const MAX_HEADER = 64 * 1024

/** Seals `plain` for the recipients (age1... public keys) as one age file, streamed. */
export async function sealStream(plain: ReadableStream<Uint8Array>, recipients: readonly string[]): Promise<ReadableStream<Uint8Array>> {
  await sodium.ready
  let fileKey: Uint8Array | null = null
  const e = new Encrypter()
  for (const r of recipients) e.addRecipient(r)
  e.addRecipient({ wrapFileKey: (key) => ((fileKey = key.slice()), []) })
  const empty = await e.encrypt(new Uint8Array(0))
  if (!fileKey) throw new Error('age: no file key was wrapped')
  // An empty file is its header, the 16-byte nonce and one empty chunk (its 16-byte tag).
  const header = empty.slice(0, empty.length - 16 - TAG)
  const nonce = randomBytes(16)
  const key = payloadKey(fileKey, nonce)
  const counter = new StreamNonce()
  const pending = new Uint8Array(CHUNK)
  let used = 0
  return plain.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
    start(controller) {
      controller.enqueue(header)
      controller.enqueue(new Uint8Array(nonce))
    },
    transform(chunk, controller) {
      let at = 0
      while (at < chunk.length) {
        // A full chunk goes once more bytes follow it: only then is it known not to be the last.
        if (used === CHUNK) {
          controller.enqueue(sodium.crypto_aead_chacha20poly1305_ietf_encrypt(pending, null, null, counter.next(false), key))
          used = 0
        }
        const n = Math.min(CHUNK - used, chunk.length - at)
        pending.set(chunk.subarray(at, at + n), used)
        used += n
        at += n
      }
    },
    flush(controller) {
      controller.enqueue(sodium.crypto_aead_chacha20poly1305_ietf_encrypt(pending.subarray(0, used), null, null, counter.next(true), key))
    },
  }))
}

/**
 * Opens an age file with the identities (AGE-SECRET-KEY-1...). The header is read and checked
 * before this resolves (a wrong identity, or no age file, throws here); a damaged, truncated or
 * extended payload errors the stream at the chunk where it is found.
 */
export async function openStream(sealed: ReadableStream<Uint8Array>, identities: readonly string[]): Promise<ReadableStream<Uint8Array>> {
  await sodium.ready
  const reader = sealed.getReader()
  let buffered: Uint8Array = new Uint8Array(0)
  const more = async (): Promise<boolean> => {
    const r = await reader.read()
    if (r.done) return false
    buffered = concat(buffered, r.value)
    return true
  }
  let end = -1
  for (;;) {
    end = headerEnd(buffered)
    if (end >= 0) break
    if (buffered.length > MAX_HEADER || !(await more())) {
      await reader.cancel().catch(() => {})
      throw new Error('Not an age file: no header (age-encryption.org/v1) in its first bytes')
    }
  }
  const d = new Decrypter()
  for (const i of identities) d.addIdentity(i)
  let fileKey: Uint8Array
  try {
    fileKey = await d.decryptHeader(buffered.slice(0, end))
  } catch (err) {
    await reader.cancel().catch(() => {})
    throw err
  }
  while (buffered.length < end + 16) {
    if (!(await more())) throw new Error('age: the file ends inside its nonce')
  }
  const key = payloadKey(fileKey, buffered.subarray(end, end + 16))
  buffered = buffered.subarray(end + 16)
  const counter = new StreamNonce()
  let chunks = 0
  const open = (bytes: Uint8Array, last: boolean) => {
    chunks++
    return sodium.crypto_aead_chacha20poly1305_ietf_decrypt(null, bytes, null, counter.next(last), key)
  }
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        // A full chunk is opened as not the last once a byte after it is here; what is left at
        // the end is the last chunk (possibly full).
        while (buffered.length <= SEALED_CHUNK) {
          if (!(await more())) {
            if (buffered.length < TAG) throw new Error('age: the file is truncated')
            const last = open(buffered, true)
            if (last.length === 0 && chunks > 1) throw new Error('age: the last chunk is empty')
            buffered = new Uint8Array(0)
            controller.enqueue(last)
            controller.close()
            return
          }
        }
        controller.enqueue(open(buffered.subarray(0, SEALED_CHUNK), false))
        buffered = buffered.subarray(SEALED_CHUNK)
      } catch (err) {
        await reader.cancel().catch(() => {})
        controller.error(err instanceof Error && /cannot be decrypted|incorrect/i.test(err.message) ? new Error('age: a chunk does not open (damaged, or not sealed for this identity)') : err)
      }
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 })
}

/** Where the header ends: just past the newline that ends its `--- MAC` line; -1 when not yet read. */
function headerEnd(bytes: Uint8Array): number {
  // "\n--- " starts the MAC line; the header is ASCII, so bytes are searched as latin1 text.
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, MAX_HEADER + 1)).toString('latin1')
  const mac = text.indexOf('\n--- ')
  if (mac < 0) return -1
  const nl = text.indexOf('\n', mac + 1)
  return nl < 0 ? -1 : nl + 1
}

function payloadKey(fileKey: Uint8Array, nonce: Uint8Array): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', fileKey, nonce, 'payload', 32))
}

/** The STREAM nonce: an 11-byte big-endian chunk counter and the last-chunk flag. */
class StreamNonce {
  private readonly bytes = new Uint8Array(12)
  private count = 0

  next(last: boolean): Uint8Array {
    const nonce = this.bytes.slice()
    nonce[11] = last ? 1 : 0
    this.count++
    // Up to 2^53 chunks, far past any archive.
    let c = this.count
    for (let i = 10; i >= 0 && c > 0; i--) {
      this.bytes[i] = c % 256
      c = Math.floor(c / 256)
    }
    return nonce
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b
  const out = new Uint8Array(a.length + b.length)
  out.set(a)
  out.set(b, a.length)
  return out
}
