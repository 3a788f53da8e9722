import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { BoxKeyFile, readSecretsKeyText } from './box-key'
import { SecretsKeyFileError, SecretUnreadableError } from './errors'
import { SECRETS_KEY_FILE_PATTERN } from './types'

/** The box key on real files: sealing with AES-256-GCM, the site and name as additional data. */
let dir: string
let file: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-box-key-'))
  file = join(dir, 'secrets.key')
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

const SHOP = { siteId: '5e1f0c2a-0000-4000-8000-000000000001', name: 'STRIPE_KEY' }
const reasonOf = (f: () => unknown) => {
  try {
    f()
  } catch (err) {
    if (err instanceof SecretUnreadableError) return err.reason
    throw err
  }
  return 'opened'
}

describe('the box key', () => {
  it('is made at the first seal, 0600, of its form, and opens what it sealed; the same value seals differently each time', () => {
    const box = new BoxKeyFile(file)
    expect(existsSync(file)).toBe(false)
    const sealed = box.seal('sk_live_4eC39HqLyjWDarjtT1zdp7dc', SHOP)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(readFileSync(file, 'utf8')).toMatch(SECRETS_KEY_FILE_PATTERN)
    expect(sealed).not.toContain('sk_live')
    expect(box.seal('sk_live_4eC39HqLyjWDarjtT1zdp7dc', SHOP)).not.toBe(sealed)
    expect(box.open(sealed, SHOP)).toBe('sk_live_4eC39HqLyjWDarjtT1zdp7dc')
    // Another process (berth serve after a restart) reads the same file.
    expect(new BoxKeyFile(file).open(sealed, SHOP)).toBe('sk_live_4eC39HqLyjWDarjtT1zdp7dc')
    expect(box.open(box.seal('', SHOP), SHOP)).toBe('')
    expect(box.open(box.seal('é ✓ 🚀\nline two', SHOP), SHOP)).toBe('é ✓ 🚀\nline two')
  })

  it('refuses another site or name (the additional data), a changed text, another key, and says when the key is missing', () => {
    const box = new BoxKeyFile(file)
    const sealed = box.seal('hunter2-but-longer', SHOP)
    expect(reasonOf(() => box.open(sealed, { ...SHOP, siteId: '5e1f0c2a-0000-4000-8000-000000000002' }))).toBe('not_opened')
    expect(reasonOf(() => box.open(sealed, { ...SHOP, name: 'OTHER' }))).toBe('not_opened')
    const bytes = Buffer.from(sealed, 'base64')
    bytes[bytes.length - 20]! ^= 1
    expect(reasonOf(() => box.open(bytes.toString('base64'), SHOP))).toBe('not_opened')
    expect(reasonOf(() => box.open('AQE=', SHOP))).toBe('not_opened')
    // Another box's key file, of the same id.
    const other = join(dir, 'other.key')
    new BoxKeyFile(other).seal('x', SHOP)
    expect(reasonOf(() => new BoxKeyFile(other).open(sealed, SHOP))).toBe('not_opened')
    // No key file at all (a store restored without it).
    expect(reasonOf(() => new BoxKeyFile(join(dir, 'none.key')).open(sealed, SHOP))).toBe('no_key')
  })

  it('seals with the newest key of a rotated file and still opens what the older one sealed', () => {
    const box = new BoxKeyFile(file)
    const old = box.seal('the old value', SHOP)
    writeFileSync(file, readFileSync(file, 'utf8') + `2:${Buffer.alloc(32, 7).toString('base64')}\n`)
    const rotated = new BoxKeyFile(file)
    const fresh = rotated.seal('the new value', SHOP)
    expect(Buffer.from(fresh, 'base64')[1]).toBe(2)
    expect(rotated.open(old, SHOP)).toBe('the old value')
    expect(rotated.open(fresh, SHOP)).toBe('the new value')
    // A box that has only key 1 says it lacks key 2.
    writeFileSync(file, readFileSync(file, 'utf8').split('\n')[0] + '\n')
    expect(reasonOf(() => new BoxKeyFile(file).open(fresh, SHOP))).toBe('no_key')
  })

  it('never overwrites a key file that is not of its form, and two makers at once end up with one key', () => {
    writeFileSync(file, 'half a key')
    expect(() => new BoxKeyFile(file).seal('x', SHOP)).toThrow(SecretsKeyFileError)
    expect(readFileSync(file, 'utf8')).toBe('half a key')
    rmSync(file)
    const a = new BoxKeyFile(file)
    const b = new BoxKeyFile(file)
    const fromA = a.seal('from a', SHOP)
    const fromB = b.seal('from b', SHOP)
    expect(b.open(fromA, SHOP)).toBe('from a')
    expect(a.open(fromB, SHOP)).toBe('from b')
    expect(readSecretsKeyText(file)!.split('\n').filter(Boolean)).toHaveLength(1)
    expect(readSecretsKeyText(join(dir, 'absent'))).toBeNull()
  })
})
