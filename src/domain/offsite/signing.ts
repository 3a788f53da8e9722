import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto'
import type { OffsiteManifest } from './manifest'

/**
 * Who wrote a copy off the box. age only encrypts: anyone who can write to the bucket and reads
 * a recipient's public key (both in the box's config) can seal a manifest, a store and archives
 * that open with the hoster's identity. So every manifest is signed with an Ed25519 key of the
 * box (settings `offsite_signing_key`, made once, 0600 with the store), and the manifest names
 * every other object (the store copy, the certificates, each archive) with the SHA-256 of its
 * plaintext, which `berth restore` checks before it puts the object in place: the manifest's
 * signature covers them all. The hoster keeps the public half (`berth offsite status` prints it)
 * and hands it to `berth restore --signing-key`.
 *
 * The signature is a field of the manifest's JSON (`signature`), over the rest of the document
 * as JSON.stringify writes it (what was parsed is what was checked), after a fixed context line.
 */

/** `ed25519:` and the raw 32-byte public key in base64url: what the hoster copies. */
export const SIGNING_KEY_PATTERN = /^ed25519:[A-Za-z0-9_-]{43}$/
const CONTEXT = 'berth offsite manifest\n'

export interface ManifestSignature {
  alg: 'ed25519'
  /** The public half of the key that signed (for the message when it is not the one given). */
  public_key: string
  /** base64 of the 64-byte Ed25519 signature. */
  value: string
}

export type SignedManifest = OffsiteManifest & { signature: ManifestSignature }

/** Why a manifest was not accepted as the box's: not signed, or not by the key given. */
export class ManifestSignatureError extends Error {}

/** A new private signing key: PKCS#8 DER in base64, as kept in the store's settings. */
export function newSigningKey(): string {
  const { privateKey } = generateKeyPairSync('ed25519')
  return privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64')
}

/** The public half of a private key made by newSigningKey, as the hoster sees it (`ed25519:...`). */
export function publicKeyOf(privateKey: string): string {
  return textOf(createPublicKey(privateOf(privateKey)))
}

/** Throws an Error saying what is wrong unless `text` is a public key as publicKeyOf writes it. */
export function checkPublicKey(text: string): string {
  const trimmed = text.trim()
  if (!SIGNING_KEY_PATTERN.test(trimmed)) throw new Error(`${JSON.stringify(text.slice(0, 80))} is not a signing key: give the line berth offsite status printed as "Signing key", ed25519: and 43 characters`)
  return trimmed
}

/** The manifest with its signature by `privateKey`. */
export function signManifest(manifest: OffsiteManifest, privateKey: string): SignedManifest {
  const key = privateOf(privateKey)
  const value = sign(null, Buffer.from(CONTEXT + JSON.stringify(manifest)), key).toString('base64')
  return { ...manifest, signature: { alg: 'ed25519', public_key: textOf(createPublicKey(key)), value } }
}

/**
 * The manifest without its signature once the signature is checked against `publicKey` (a key
 * checkPublicKey accepts). A manifest without a signature (made by a berth before copies were
 * signed) passes only with `acceptUnsigned`; `publicKey` null accepts none that is signed.
 * Throws ManifestSignatureError saying why otherwise.
 */
export function verifyManifest(value: unknown, trust: { publicKey: string | null; acceptUnsigned: boolean }): { manifest: unknown; signed: boolean } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ManifestSignatureError('it is not a JSON object')
  const { signature, ...rest } = value as Record<string, unknown>
  if (signature === undefined) {
    if (trust.acceptUnsigned) return { manifest: rest, signed: false }
    throw new ManifestSignatureError('it carries no signature: it was made by a berth older than signed copies, or by someone else. If you know the copies there are your box\'s and older than signed copies, pass --accept-unsigned')
  }
  if (!trust.publicKey) throw new ManifestSignatureError('it is signed, and no --signing-key was given to check it: give the key berth offsite status printed')
  const sig = signature as Partial<ManifestSignature> | null
  if (typeof sig !== 'object' || sig === null || sig.alg !== 'ed25519' || typeof sig.value !== 'string' || !/^[A-Za-z0-9+/]{86}==$/.test(sig.value)) {
    throw new ManifestSignatureError('its signature is not an Ed25519 signature')
  }
  const ok = verify(null, Buffer.from(CONTEXT + JSON.stringify(rest)), keyOfText(trust.publicKey), Buffer.from(sig.value, 'base64'))
  if (!ok) {
    const claimed = typeof sig.public_key === 'string' && sig.public_key !== trust.publicKey ? ` (it names the key ${sig.public_key.slice(0, 80)})` : ''
    throw new ManifestSignatureError(`its signature is not one of the signing key ${trust.publicKey}${claimed}: it was not written by the box that key belongs to, or it was changed since`)
  }
  return { manifest: rest, signed: true }
}

function privateOf(text: string): KeyObject {
  return createPrivateKey({ key: Buffer.from(text, 'base64'), format: 'der', type: 'pkcs8' })
}

function textOf(key: KeyObject): string {
  return `ed25519:${key.export({ format: 'jwk' }).x}`
}

function keyOfText(text: string): KeyObject {
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: checkPublicKey(text).slice('ed25519:'.length) }, format: 'jwk' })
}
