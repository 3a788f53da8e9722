import { t } from 'elysia'
import { schemaOp } from '../http/doors'
import { Body, checkedByService } from '../http/schemas'
import { SSH_PUBLIC_KEY_PATTERN } from '../http/name-patterns'
import { SshGitPush, SshHostKey, SshInfo, SshKeyView, SshKeyAdded } from '../../domain/ssh'
export { SshGitPush, SshHostKey, SshInfo, SshKeyView, SshKeyAdded }

export const AddSshKeyBody = Body({
  public_key: t.String({
    minLength: 1, maxLength: 16384,
    description: 'One public key line, as in a .pub file: [options] type base64-key [comment], where type is ssh-ed25519, ssh-rsa (2048 bits or more) or ecdsa-sha2-nistp256/384/521.',
    // The service names what is wrong (a private key, several lines, a DSA key, a cut key).
    ...checkedByService({ pattern: SSH_PUBLIC_KEY_PATTERN }),
  }),
})

export const SshKeyParams = t.Object({
  tenant_slug: t.String({ maxLength: 100 }),
  key_id: t.String({ pattern: '^[0-9a-f]{64}$', examples: ['9c1185a5c5e9fc54612808977ee8f548b2258d31f0a8d4b1e0c6e3b9a4f2d7c1'], error: `must be a key_id as ${schemaOp('listSshKeys')} lists them (64 hex characters)` }),
})
