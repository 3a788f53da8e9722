import { t } from 'elysia'
import { Body, checkedByService } from '../http/schemas'
import { ENV_LIMITS, ENV_NAME_PATTERN, RESERVED_NAMES, RESERVED_PREFIXES, SiteEnv } from '../../domain/env'
export { SiteEnv }

const L = ENV_LIMITS
const NAMES = `names of letters, digits and _ (not starting with a digit, at most ${L.nameChars} characters; not ${RESERVED_NAMES.join(', ')}, nor starting ${RESERVED_PREFIXES.join(' or ')})`

/**
 * The body of PATCH and PUT. The schema gives the shape; names, value sizes (UTF-8 bytes) and the
 * site's totals are the service's to check (domain/env/rules.ts), with messages naming the field
 * (`variables.NAME`, `secret`).
 */
export const SiteEnvBody = Body({
  variables: t.Optional(t.Record(t.String(), t.Union([t.String(), t.Null()], { error: 'must be a string, or null to remove the variable' }), {
    description: `NAME -> value: ${NAMES}; each value a string of at most ${L.valueBytes} bytes in UTF-8 (newlines allowed, no NUL); null removes the variable. A site holds at most ${L.variables} variables and ${L.totalBytes} bytes of names and values.`,
    examples: [{ DATABASE_URL: 'postgres://app@db.example.com/app', STRIPE_SECRET_KEY: 'sk_live_51H...', OLD_FLAG: null }],
    error: 'must be an object of NAME -> value, each value a string or null (to remove it), such as {"API_URL": "https://api.example.com"}',
    ...checkedByService({ propertyNames: { pattern: ENV_NAME_PATTERN, maxLength: L.nameChars } }),
  })),
  secret: t.Optional(t.Array(t.String({ maxLength: L.nameChars }), {
    maxItems: L.variables,
    description: 'Names to keep secret: set in `variables` in the same call, or existing variables to mark secret (keeping their values). A secret is sealed at rest, never shown again, masked in deployment output and logs, and stays secret when its value is replaced; to make it plain, remove it and set it again.',
    examples: [['STRIPE_SECRET_KEY']],
  })),
}, { description: 'Settings and secrets of the site: what its app, its build, its deploy hook and exec get as environment variables.' })
