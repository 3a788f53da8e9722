import type { Sealed } from '../../drivers/offsite/age'

/**
 * What the copier needs of the outside, handed in by src/compose/offsite.ts: sealing in the age
 * format (drivers/offsite/age.ts), the store's consistent copy (store/copy.ts), the tls folder's
 * tar (drivers/offsite/tls-folder.ts) and the box's own age identity (store/settings.ts).
 */
export interface Sealing {
  /** Seals a stream for the recipients; `plain` resolves to the plaintext's digest and size. */
  seal(plain: ReadableStream<Uint8Array>, recipients: readonly string[]): Promise<Sealed>
  sealBytes(plain: Uint8Array | string, recipients: readonly string[]): Promise<Uint8Array>
  /** Opens a sealed stream (throws at once for a wrong identity; a damaged body errors the stream). */
  open(sealed: ReadableStream<Uint8Array>, identities: readonly string[]): Promise<ReadableStream<Uint8Array>>
}

/** A consistent copy of the store, made for one copy off the box. */
export interface StoreCopySource {
  take(): Promise<{ stream(): ReadableStream<Uint8Array>; discard(): Promise<void> }>
}

/** `{data_dir}/tls` as a tar: null when there is nothing in it. */
export interface TlsSource {
  tar(): Promise<ReadableStream<Uint8Array> | null>
}

/** DATA_DIR/secrets.key, the box key of the sites' secrets (drivers/secrets): its text, or null when the box never sealed one. */
export interface SecretsKeySource {
  text(): Promise<string | null>
}

/**
 * The box's own age identity (settings `offsite_box_identity`), made once: every copy is sealed
 * for it too, so the daily drill can read a copy back. The hoster's identities never live here.
 */
export interface BoxIdentity {
  identity(): Promise<string>
  recipient(): Promise<string>
}

/**
 * The box's signing key (settings `offsite_signing_key`, made once): every manifest is signed
 * with it (signing.ts), and the hoster keeps its public half for `berth restore --signing-key`.
 */
export interface SigningKey {
  /** PKCS#8 DER in base64 (signing.ts newSigningKey). */
  privateKey(): string
  /** `ed25519:...`, as `berth offsite status` prints it. */
  publicKey(): string
}

/** First retry after this long, then twice as long each time, up to MAX_BACKOFF_MS. */
export const FIRST_BACKOFF_MS = 30_000
export const MAX_BACKOFF_MS = 60 * 60_000

/** When a copy that failed for the `attempts`-th time in a row is tried again. */
export function retryAt(now: number, attempts: number): number {
  return now + Math.min(FIRST_BACKOFF_MS * 2 ** Math.max(0, attempts - 1), MAX_BACKOFF_MS)
}

/** A failure's words for the status: the destination's own reason, or the error's message. */
export function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
