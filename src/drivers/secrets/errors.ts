/**
 * A sealed value that cannot be opened: `no_key` when the key it was sealed with is not in the key
 * file (DATA_DIR/secrets.key missing, or another box's), `not_opened` when the key is there but the
 * text does not open (a different key under the same id, a changed text, or a text moved to another
 * site or name).
 */
export class SecretUnreadableError extends Error {
  constructor(readonly reason: 'no_key' | 'not_opened', message: string) {
    super(message)
  }
}

/** The key file exists but is not of its form (SECRETS_KEY_FILE_PATTERN): Berth will not overwrite or guess. */
export class SecretsKeyFileError extends Error {}
