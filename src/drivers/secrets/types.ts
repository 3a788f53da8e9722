/**
 * The box key's contract (drivers/secrets/box-key.ts): the sites' secret values sealed with a key
 * of the box's own, kept outside the store (DATA_DIR/secrets.key), so a copy of the store alone
 * never reveals them.
 */

/** Whose value a sealed text is: the additional data it is sealed with, so it opens for that site and name only. */
export interface SealedFor {
  siteId: string
  name: string
}

export interface SecretBox {
  /**
   * Seals `plain` for one site's variable with the newest key of the key file, making the file
   * (32 random bytes, 0600) at the first use. Each call seals with a fresh nonce: the same value
   * twice gives two texts.
   */
  seal(plain: string, owner: SealedFor): string
  /**
   * Opens a text `seal` made for the same site and name. Throws SecretUnreadableError (errors.ts)
   * when the key it was sealed with is not in the key file (a store restored without its key), or
   * when it does not open: another key of the same id, a changed text, another site's or name's.
   */
  open(sealed: string, owner: SealedFor): string
}

/**
 * The key file's form: one line per key, `ID:BASE64` (ID 1 to 255, the key 32 bytes in base64);
 * the highest ID seals, every listed key opens. A copy off the box carries the file's text, and
 * `berth restore` checks it against this before writing it back.
 */
export const SECRETS_KEY_FILE_PATTERN = /^(?:[1-9][0-9]{0,2}:[A-Za-z0-9+/]{43}=\n)+$/
