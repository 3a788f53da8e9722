/**
 * Example values for the OpenAPI document, made from the schemas themselves so an example can
 * never describe a field that is not there. A schema's own `examples` (or `default`, `const`,
 * first `enum` value) wins; otherwise a value of the right type and format, shaped by the
 * property's name where the format says nothing (`slug`, `email`, ...). Every example is checked
 * against its schema (app.test.ts and `redocly lint`).
 */

type Schema = Record<string, any>

const SAMPLE_UUID = '0b6f7c1e-5d1a-4c8e-9f3a-2e4d5c6b7a80'
const SAMPLE_TIME = '2026-11-24T12:00:00.000Z'

/** Values for string properties by name, when neither format nor examples say more. */
const BY_NAME: Record<string, string> = {
  slug: 'acme-shop',
  tenant_slug: 'acme-shop',
  site_slug: 'acme-shop',
  requested_slug: 'acme-shop',
  plan_slug: 'starter',
  plan: 'starter',
  sku: 'svc_starter_monthly',
  email: 'agent@example.com',
  buyer_email: 'agent@example.com',
  name: 'Agent Key',
  path: 'public/index.html',
  content: '<h1>Hello</h1>\n',
  content_b64: 'PGgxPkhlbGxvPC9oMT4K',
  public_key: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl agent@example.com',
  fingerprint: 'SHA256:Ud1cVhq4mTk2lX6tQ9bVh3k0yWfJm5Zr7nQe8sD1aBc',
  currency: 'usd',
  message: 'What happened, and what to do next.',
  token: 'ctk_3e9a4b7c1d2f5a6b8c0d1e2f3a4b5c6d',
  api_key: 'bth_4f1c2a9e8b7d6c5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c',
  key_prefix: 'bth_4f1c2a9e',
  prefix: 'bth_4f1c2a9e',
  payment_method_id: 'pm_card_visa',
  checkout_secret: 'cs_secret_9d8c7b6a5f4e3d2c1b0a',
  region: 'ca-east-1',
  provider: 'Example Hosting',
  version: '0.1.0',
  payment_processor: 'builtin',
  token_path: '~/.svc/.claim_token',
  host: 'ssh.example.com',
  username: 'acme-shop',
  command: 'ssh -p 2201 acme-shop@ssh.example.com',
  comment: 'agent@example.com',
  file: 'logs/error.log',
  line: '2026/11/24 12:00:00 [error] 7#7: *1 open() "/home/site/public/missing.html" failed (2: No such file or directory)',
  domain: 'acme-shop.com',
  description: 'A short description.',
  output: 'Restarted the web server.',
}

export function exampleOf(schema: Schema | undefined, name = '', resolve: (ref: string) => Schema | undefined = () => undefined, depth = 0): unknown {
  if (!schema || depth > 12) return null
  if (schema.$ref) return exampleOf(resolve(schema.$ref), name, resolve, depth + 1)
  if (schema.example !== undefined) return schema.example
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0]
  if (schema.const !== undefined) return schema.const
  if (schema.default !== undefined) return schema.default
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0]
  const branches = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined
  if (branches?.length) {
    // The richest branch: a value rather than null.
    const branch = branches.find((b) => b.type !== 'null') ?? branches[0]
    return exampleOf(branch, name, resolve, depth + 1)
  }
  // A typed schema's allOf holds conditions on it (checkedByService), not parts of its value.
  if (Array.isArray(schema.allOf) && schema.type === undefined) {
    return Object.assign({}, ...schema.allOf.map((s: Schema) => exampleOf(s, name, resolve, depth + 1)))
  }
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {}
      for (const [key, sub] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) out[key] = exampleOf(sub, key, resolve, depth + 1)
      return out
    }
    case 'array': {
      const one = exampleOf(schema.items, singular(name), resolve, depth + 1)
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => one)
    }
    case 'integer':
    case 'number': {
      const low = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : undefined)
      const high = schema.maximum ?? (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum - 1 : undefined)
      const value = low !== undefined ? Math.max(low, 1) : 1
      return high !== undefined ? Math.min(value, high) : value
    }
    case 'boolean':
      return true
    case 'null':
      return null
    case 'string':
      return stringExample(schema, name)
    default:
      return null
  }
}

function stringExample(schema: Schema, name: string): string {
  switch (schema.format) {
    case 'uuid':
      return SAMPLE_UUID
    case 'date-time':
      return SAMPLE_TIME
    case 'date':
      return SAMPLE_TIME.slice(0, 10)
    case 'email':
      return 'agent@example.com'
    case 'uri':
      return 'https://acme-shop.example.com/'
  }
  let value = BY_NAME[name] ?? (name === 'error' ? 'What went wrong.' : name.endsWith('_id') || name === 'id' ? SAMPLE_UUID : name.endsWith('_at') ? SAMPLE_TIME : name.endsWith('url') ? 'https://acme-shop.example.com/' : 'text')
  if (schema.maxLength !== undefined && value.length > schema.maxLength) value = value.slice(0, schema.maxLength)
  if (schema.minLength !== undefined && value.length < schema.minLength) value = value.padEnd(schema.minLength, 'x')
  return value
}

const singular = (name: string) => (name.endsWith('s') ? name.slice(0, -1) : name)
