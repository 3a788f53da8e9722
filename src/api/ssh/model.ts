import { t } from 'elysia'
import { Body } from '../http/schemas'

export const SshHostKey = t.Object({
  type: t.String(),
  public_key: t.String({ description: 'The host key as it appears in known_hosts (type and base64).' }),
  fingerprint: t.String({ description: 'SHA256:... as ssh-keygen -l prints it; compare with what ssh shows on first connection.' }),
})

export const SshInfo = t.Object({
  host: t.String(),
  port: t.Integer(),
  username: t.String(),
  command: t.String({ description: 'A ready command line; add -i KEYFILE when the key is not your default.' }),
  host_keys: t.Array(SshHostKey, { description: 'Empty while the site is not running.' }),
  known_hosts: t.Array(t.String(), { description: 'Lines for ~/.ssh/known_hosts, so the first connection needs no prompt.' }),
})

export const SshKeyView = t.Object({
  key_id: t.String({ description: 'Hex SHA-256 of the key; DELETE /sites/{slug}/ssh/keys/{key_id}/ removes it.' }),
  type: t.String(),
  fingerprint: t.String(),
  comment: t.String(),
})

export const SshKeyAdded = t.Object({
  ...SshKeyView.properties,
  added: t.Boolean({ description: 'false when the key was already installed (nothing changed).' }),
})

export const AddSshKeyBody = Body({
  public_key: t.String({ minLength: 1, maxLength: 16384, description: 'One public key line: ssh-ed25519, ssh-rsa (2048 bits or more) or ecdsa-sha2-nistp256/384/521; options and comment allowed.' }),
})

export const SshKeyParams = t.Object({
  tenant_slug: t.String({ maxLength: 100 }),
  key_id: t.String({ pattern: '^[0-9a-f]{64}$', error: 'must be a key_id from GET /sites/{slug}/ssh/keys/ (64 hex characters)' }),
})
