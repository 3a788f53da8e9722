import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { closeSync, fchmodSync, fsyncSync, linkSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { PRIVATE_MODE } from '../../lib/private-file'
import { SecretsKeyFileError, SecretUnreadableError } from './errors'
import { SECRETS_KEY_FILE_PATTERN, type SealedFor, type SecretBox } from './types'

/** The sealed form's first byte: its layout, [format][key id][nonce 12][ciphertext][tag 16], in base64. */
const FORMAT = 1
const HEADER = 2
const NONCE = 12
const TAG = 16
const KEY_BYTES = 32

/**
 * The text of the key file, or null when there is none. Throws SecretsKeyFileError when it is
 * not of its form (a truncated or hand-edited file): Berth neither overwrites it nor guesses.
 */
export function readSecretsKeyText(file: string): string | null {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  }
  if (!SECRETS_KEY_FILE_PATTERN.test(text)) throw new SecretsKeyFileError(`${file} is not a secrets key file (lines of ID:BASE64); put back the one from your copies, or move it away to start a new key (the secrets sealed with it become unreadable)`)
  return text
}

/** The keys of a key file's text by id. */
function keysOf(text: string): Map<number, Buffer> {
  const keys = new Map<number, Buffer>()
  for (const line of text.split('\n')) {
    if (!line) continue
    const [id, key] = line.split(':') as [string, string]
    if (+id > 255) throw new SecretsKeyFileError(`the secrets key file names key ${id}; ids go from 1 to 255`)
    keys.set(+id, Buffer.from(key, 'base64'))
  }
  return keys
}

/**
 * AES-256-GCM with the box key in DATA_DIR/secrets.key (SecretBox of types.ts). The additional
 * data is the sealed form's header, the site's id and the variable's name: a sealed value copied
 * to another site's or another name's row does not open. The key id in the header lets a later
 * key be added to the file (a rotation) while the values sealed with the older one still open.
 *
 * The file is made at the first seal, whole or not at all and never over another process's
 * (written to a temporary file, then linked into place: two processes making it at once end up
 * with the one that was first). Its keys are read once and kept; until it exists each open reads
 * it again, so a key file put back by hand is taken up without a restart.
 */
export class BoxKeyFile implements SecretBox {
  private keys: Map<number, Buffer> | null = null

  constructor(private file: string) {}

  seal(plain: string, owner: SealedFor): string {
    const keys = this.loaded() ?? this.make()
    const id = Math.max(...keys.keys())
    const header = Buffer.from([FORMAT, id])
    const nonce = randomBytes(NONCE)
    const cipher = createCipheriv('aes-256-gcm', keys.get(id)!, nonce, { authTagLength: TAG })
    cipher.setAAD(aadOf(header, owner))
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
    return Buffer.concat([header, nonce, body, cipher.getAuthTag()]).toString('base64')
  }

  open(sealed: string, owner: SealedFor): string {
    const bytes = Buffer.from(sealed, 'base64')
    if (bytes.length < HEADER + NONCE + TAG || bytes[0] !== FORMAT) throw new SecretUnreadableError('not_opened', 'the sealed value is not of the form Berth seals')
    const id = bytes[1]!
    const key = this.loaded()?.get(id)
    if (!key) throw new SecretUnreadableError('no_key', `it was sealed with key ${id}, which ${this.file} does not hold`)
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(HEADER, HEADER + NONCE), { authTagLength: TAG })
    decipher.setAAD(aadOf(bytes.subarray(0, HEADER), owner))
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG))
    try {
      return Buffer.concat([decipher.update(bytes.subarray(HEADER + NONCE, bytes.length - TAG)), decipher.final()]).toString('utf8')
    } catch {
      throw new SecretUnreadableError('not_opened', `it does not open with key ${id} of ${this.file} (another key of that id, or a changed value)`)
    }
  }

  private loaded(): Map<number, Buffer> | null {
    if (this.keys) return this.keys
    const text = readSecretsKeyText(this.file)
    return text === null ? null : (this.keys = keysOf(text))
  }

  private make(): Map<number, Buffer> {
    const temporary = `${this.file}.${process.pid}.tmp`
    const fd = openSync(temporary, 'w', PRIVATE_MODE)
    try {
      fchmodSync(fd, PRIVATE_MODE)
      writeSync(fd, `1:${randomBytes(KEY_BYTES).toString('base64')}\n`)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    try {
      linkSync(temporary, this.file)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    } finally {
      rmSync(temporary, { force: true })
    }
    return this.loaded()!
  }
}

const aadOf = (header: Uint8Array, owner: SealedFor) => Buffer.concat([header, Buffer.from(`\0berth-site-env\0${owner.siteId}\0${owner.name}`, 'utf8')])
