import { t } from 'elysia'
import { DateTime, Nullable, Uuid } from '../http/schemas'
import { Deployment } from '../../domain/deployments'
import { ARCHIVE_B64_MAX_CHARS } from '../../domain/apps'
export { Deployment }

export const DeploymentParams = t.Object({ tenant_slug: t.String({ maxLength: 100 }), deployment_id: Uuid() })

const SecretName = t.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$', description: 'The name of one of the site\'s secrets (patchSiteEnv with "secret").' })

export const DeployBody = t.Object({
  source: t.Optional(t.Object({
    git: t.Optional(t.String({ minLength: 1, maxLength: 2048, description: 'The repository: https://host/path, ssh://git@host/path or git@host:path. Its host must not resolve to a loopback, private or link-local address (unless the hoster allows that network).' })),
    archive_base64: t.Optional(t.String({ maxLength: ARCHIVE_B64_MAX_CHARS, pattern: '^[A-Za-z0-9+/]*={0,2}$', description: 'Instead of git: the tree as a tar.gz or zip in standard base64 (at most 10 MiB decoded), for MCP clients, which cannot send a raw body. Over HTTP, send the archive as the body instead (no size limit but the site\'s disk).' })),
    format: t.Optional(t.Union([t.Literal('gzip'), t.Literal('zip')], { description: "archive_base64's format (default gzip)." })),
    ref: t.Optional(t.String({ minLength: 1, maxLength: 255, pattern: '^[^-\\s][^\\s]*$', description: 'A branch, a tag or a full commit id; the default branch when absent.', error: 'must be a branch, a tag or a full commit id (main, v1.2.0, a 40-hex sha): no spaces, not starting with "-"' })),
    token_secret: t.Optional({ ...SecretName, description: 'For a private https repository: the secret holding a token (sent as HTTP Basic password, user x-access-token).' }),
    ssh_key_secret: t.Optional({ ...SecretName, description: 'For a private ssh repository: the secret holding a deploy key (an OpenSSH private key).' }),
  }, { additionalProperties: false })),
}, { additionalProperties: false, examples: [{}], description: 'None (a reload and ~/deploy.sh, as before), or a source to build. An archive is sent as the raw body instead, with Content-Type application/gzip or application/zip.' })
