import { createHash, createPublicKey } from 'node:crypto'

/** Key types accepted for SSH login (spec part 4: ssh-ed25519, ssh-rsa, ecdsa-sha2-*). */
const CURVES = { 'ecdsa-sha2-nistp256': ['nistp256', 'P-256', 32], 'ecdsa-sha2-nistp384': ['nistp384', 'P-384', 48], 'ecdsa-sha2-nistp521': ['nistp521', 'P-521', 66] } as const
const TYPES = new Set(['ssh-ed25519', 'ssh-rsa', ...Object.keys(CURVES)])
/** RSA keys shorter than this are refused (NIST SP 800-131A: 2048 bits since 2014). */
export const MIN_RSA_BITS = 2048
const MAX_LINE = 16 * 1024

export interface PublicKey {
  /** The line as it goes into authorized_keys: options, type, blob, comment, single spaces. */
  line: string
  type: string
  /** The key's base64 blob: what identifies it, whatever its options and comment. */
  blob: string
  comment: string
  /** As ssh-keygen -l shows it: SHA256:base64 without padding. */
  fingerprint: string
  /** Hex SHA-256 of the blob: the key's id in the API (safe in a path, unlike the fingerprint). */
  id: string
  bits: number
}

/** Why a public key line is refused; the message is for the caller. */
export class PublicKeyError extends Error {}

/**
 * Parses exactly one OpenSSH public key line (sshd(8) AUTHORIZED_KEYS FILE FORMAT): optional
 * options, the type, the base64 key, an optional comment. The key itself is decoded and checked
 * by the crypto library (a point on the curve, an RSA modulus of at least 2048 bits), so that
 * what is installed is a key sshd will accept, and nothing else rides along in the file.
 *
 * @example parsePublicKey('ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI... me@laptop').fingerprint
 */
export function parsePublicKey(input: string): PublicKey {
  const text = input.replace(/\r?\n$/, '')
  if (text.length > MAX_LINE) throw new PublicKeyError(`The key line is over ${MAX_LINE} characters; send one public key line.`)
  // A pasted private key (PEM or OpenSSH armour) is the most likely mistake; name it as such.
  if (/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(text)) throw new PublicKeyError('This is a private key; keep it secret and send the public key line instead (the .pub file beside it).')
  if (/[\r\n]/.test(text)) throw new PublicKeyError('Send exactly one public key line; this has several lines (install keys one at a time).')
  // Control characters have no place in a key line and could end it early in the file.
  if (/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(text) || !text.isWellFormed()) throw new PublicKeyError('The key line holds control characters or broken text; send the line as ssh-keygen wrote it.')
  const { options, rest } = splitOptions(text.trim())
  const [type, blob, ...commentParts] = rest.split(/[ \t]+/)
  if (!type || !TYPES.has(type)) throw new PublicKeyError(`Unsupported key type '${type ?? ''}'; use ssh-ed25519, ssh-rsa (${MIN_RSA_BITS} bits or more) or ecdsa-sha2-nistp256/384/521.`)
  if (!blob || !/^[A-Za-z0-9+/]+={0,2}$/.test(blob)) throw new PublicKeyError('The key is not valid base64; paste the whole .pub line.')
  const bytes = Buffer.from(blob, 'base64')
  if (bytes.toString('base64') !== blob) throw new PublicKeyError('The key is not valid base64; paste the whole .pub line.')
  const bits = checkBlob(type, bytes)
  const comment = commentParts.join(' ')
  const sha = createHash('sha256').update(bytes).digest()
  return {
    line: [options, type, blob, comment].filter(Boolean).join(' '),
    type,
    blob,
    comment,
    fingerprint: `SHA256:${sha.toString('base64').replace(/=+$/, '')}`,
    id: sha.toString('hex'),
    bits,
  }
}

/** The fingerprint of a key blob (base64), as ssh-keygen -l prints it. */
export function fingerprintOf(blob: string): string {
  return `SHA256:${createHash('sha256').update(Buffer.from(blob, 'base64')).digest('base64').replace(/=+$/, '')}`
}

/** Leading options (which may hold quoted spaces) and the rest, when the line starts with options. */
function splitOptions(line: string): { options: string; rest: string } {
  const first = line.split(/[ \t]/, 1)[0]!
  // A known type, or something named like one (ssh-dss, sk-ssh-ed25519@openssh.com): no options.
  if (TYPES.has(first) || /^(ssh|ecdsa|sk)-[a-z0-9@.-]+$/.test(first)) return { options: '', rest: line }
  let quoted = false
  for (let i = 0; i < line.length; i++) {
    const c = line[i]
    if (c === '\\' && quoted) i++
    else if (c === '"') quoted = !quoted
    else if ((c === ' ' || c === '\t') && !quoted) return { options: line.slice(0, i), rest: line.slice(i).trim() }
  }
  throw new PublicKeyError('No key type found; a line reads like: ssh-ed25519 AAAA... comment.')
}

/** Reads the SSH wire strings of a key blob (RFC 4253 6.6) and checks them; returns the bits. */
function checkBlob(type: string, bytes: Buffer): number {
  const parts: Buffer[] = []
  let at = 0
  while (at < bytes.length) {
    if (at + 4 > bytes.length) throw new PublicKeyError('The key is truncated; paste the whole .pub line.')
    const len = bytes.readUInt32BE(at)
    if (at + 4 + len > bytes.length) throw new PublicKeyError('The key is truncated; paste the whole .pub line.')
    parts.push(bytes.subarray(at + 4, at + 4 + len))
    at += 4 + len
  }
  if (parts[0]?.toString('latin1') !== type) throw new PublicKeyError(`The key data is not a ${type} key; the type in the line must match the key.`)
  const b64url = (b: Buffer) => b.toString('base64url')
  const unsigned = (b: Buffer) => (b[0] === 0 ? b.subarray(1) : b)
  try {
    if (type === 'ssh-ed25519') {
      if (parts.length !== 2 || parts[1]!.length !== 32) throw new PublicKeyError('The ed25519 key has the wrong length; paste the whole .pub line.')
      createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: b64url(parts[1]!) }, format: 'jwk' })
      return 256
    }
    if (type === 'ssh-rsa') {
      if (parts.length !== 3) throw new PublicKeyError('The RSA key is malformed; paste the whole .pub line.')
      const n = unsigned(parts[2]!)
      const bits = n.length * 8 - Math.clz32(n[0] ?? 0) + 24
      if (bits < MIN_RSA_BITS) throw new PublicKeyError(`This RSA key has ${bits} bits; use ${MIN_RSA_BITS} or more (ssh-keygen -t rsa -b 4096), or an ed25519 key.`)
      if (bits > 16384) throw new PublicKeyError('This RSA key is over 16384 bits; use a smaller one.')
      createPublicKey({ key: { kty: 'RSA', n: b64url(n), e: b64url(unsigned(parts[1]!)) }, format: 'jwk' })
      return bits
    }
    const [curve, jwkCurve, size] = CURVES[type as keyof typeof CURVES]
    const point = parts[2]
    if (parts.length !== 3 || parts[1]!.toString('latin1') !== curve || !point || point.length !== 1 + 2 * size || point[0] !== 4) {
      throw new PublicKeyError(`The ${type} key is malformed; paste the whole .pub line.`)
    }
    createPublicKey({ key: { kty: 'EC', crv: jwkCurve, x: b64url(point.subarray(1, 1 + size)), y: b64url(point.subarray(1 + size)) }, format: 'jwk' })
    return size === 66 ? 521 : size * 8
  } catch (err) {
    if (err instanceof PublicKeyError) throw err
    throw new PublicKeyError(`The ${type} key is not a valid public key; paste the .pub line ssh-keygen wrote.`)
  }
}
