import { spawnSync } from 'bun'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { parsePublicKey } from './public-key'

/** Keys made by the real ssh-keygen, with the fingerprint it prints for each. */
const dir = mkdtempSync(join(tmpdir(), 'berth-keys-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let made = 0
function keygen(type: string, bits?: number): { line: string; fingerprint: string } {
  const file = join(dir, `${type}-${bits ?? 0}-${++made}`)
  const run = spawnSync(['ssh-keygen', '-q', '-t', type, ...(bits ? ['-b', String(bits)] : []), '-N', '', '-C', `test ${type}`, '-f', file])
  if (run.exitCode !== 0) throw new Error(run.stderr.toString())
  const fingerprint = spawnSync(['ssh-keygen', '-l', '-E', 'sha256', '-f', `${file}.pub`]).stdout.toString().split(' ')[1]!
  return { line: readFileSync(`${file}.pub`, 'utf8'), fingerprint }
}

describe('parsePublicKey', () => {
  const good: [string, number | undefined][] = [['ed25519', undefined], ['rsa', 2048], ['rsa', 3072], ['ecdsa', 256], ['ecdsa', 384], ['ecdsa', 521]]
  it.each(good)('accepts a %s key (%s bits) with the fingerprint ssh-keygen shows', (type, bits) => {
    const { line, fingerprint } = keygen(type, bits)
    const key = parsePublicKey(line)
    expect(key.fingerprint).toBe(fingerprint)
    expect(key.comment).toBe(`test ${type}`)
    expect(key.line).toBe(line.trim())
    expect(key.id).toMatch(/^[0-9a-f]{64}$/)
  })

  it('keeps options, including quoted spaces, and an empty comment', () => {
    const { line } = keygen('ed25519')
    const [type, blob] = line.split(' ')
    const key = parsePublicKey(`no-port-forwarding,command="echo hi there" ${type} ${blob}`)
    expect(key.line).toBe(`no-port-forwarding,command="echo hi there" ${type} ${blob}`)
    expect(key.comment).toBe('')
  })

  const ed = keygen('ed25519').line.trim()
  const [edType, edBlob] = ed.split(' ') as [string, string]
  const bad: [string, string, RegExp][] = [
    ['a 1024-bit RSA key', keygen('rsa', 1024).line, /1024 bits; use 2048/],
    ['two keys in one body', `${ed}\n${keygen('ecdsa', 256).line}`, /exactly one public key line/],
    ['an empty line', '   ', /No key type|Unsupported/],
    ['a DSA key type', `ssh-dss ${edBlob}`, /Unsupported key type 'ssh-dss'/],
    ['a private key', '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n', /private key; keep it secret.*\.pub/],
    ['a PEM private key line', '-----BEGIN RSA PRIVATE KEY-----', /private key/],
    ['a type that does not match the key', `ssh-rsa ${edBlob}`, /not a ssh-rsa key/],
    ['broken base64', `${edType} AAAA!!!!`, /not valid base64/],
    ['a truncated key', `${edType} ${edBlob.slice(0, 40)}`, /truncated|wrong length|not valid base64/],
    ['a carriage return inside', `${ed}\rssh-ed25519 ${edBlob}`, /exactly one public key line/],
    ['a NUL byte', `${ed}\u0000`, /control characters/],
    ['an ed25519 key of the wrong length', `${edType} ${Buffer.concat([Buffer.from([0, 0, 0, 11]), Buffer.from('ssh-ed25519'), Buffer.from([0, 0, 0, 31]), Buffer.alloc(31)]).toString('base64')}`, /wrong length/],
    ['an ECDSA point off the curve', `ecdsa-sha2-nistp256 ${Buffer.concat([Buffer.from([0, 0, 0, 19]), Buffer.from('ecdsa-sha2-nistp256'), Buffer.from([0, 0, 0, 8]), Buffer.from('nistp256'), Buffer.from([0, 0, 0, 65, 4]), Buffer.alloc(64, 7)]).toString('base64')}`, /not a valid public key/],
  ]
  it.each(bad)('refuses %s', (_name, line, message) => {
    expect(() => parsePublicKey(line)).toThrow(message)
  })
})
