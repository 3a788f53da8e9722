import { AI_MODULES, HOSTING_TYPES, TRACKS } from '../core/enums'
import { ConfigError } from './errors'
import { defaultAiTokens, type PlanSeed } from './schema'

/**
 * Validates `[[plans]]` tables from the config file; errors name the plan by index and field.
 * `defaultTokens` (`ai.tokens_per_site_monthly`) is the `ai_tokens_monthly` of a plan that does
 * not give one and has a module that calls the model (`defaultAiTokens`).
 */
export function checkPlans(input: unknown, file: string | null, defaultTokens: number): PlanSeed[] {
  if (!Array.isArray(input)) throw new ConfigError(`${file}: plans must be written as [[plans]] tables`)
  const seen = new Set<string>()
  return input.map((p: Record<string, unknown>, i) => {
    const where = `${file}: plans[${i}]`
    const fail = (field: string, what: string): never => {
      throw new ConfigError(`${where}.${field} ${what}`)
    }
    for (const key of Object.keys(p)) {
      if (!PLAN_FIELDS.includes(key)) fail(key, `is not a plan field; plans take ${PLAN_FIELDS.join(', ')}`)
    }
    const str = (f: string) => (typeof p[f] === 'string' && p[f] !== '' ? (p[f] as string) : fail(f, 'must be a non-empty string'))
    const int = (f: string, min: number) => (Number.isInteger(p[f]) && (p[f] as number) >= min ? (p[f] as number) : fail(f, `must be an integer of at least ${min}`))
    const slug = str('slug')
    if (!PLAN_SLUG.test(slug)) fail('slug', 'must be 2 to 40 lowercase letters, digits and hyphens, starting and ending with a letter or digit')
    if (seen.has(slug)) fail('slug', `repeats '${slug}'`)
    seen.add(slug)
    const track = str('track') as PlanSeed['track']
    if (!TRACKS.includes(track)) fail('track', `must be one of ${TRACKS.join(', ')}`)
    const hostingType = str('hosting_type') as PlanSeed['hosting_type']
    if (!HOSTING_TYPES.includes(hostingType)) fail('hosting_type', `must be one of ${HOSTING_TYPES.join(', ')}`)
    const price = p.price_monthly
    if (typeof price !== 'number' || price < 0) fail('price_monthly', 'must be a non-negative number (CAD)')
    const modules = p.ai_modules ?? []
    if (!Array.isArray(modules) || modules.some((m) => !AI_MODULES.includes(m))) fail('ai_modules', `must list only ${AI_MODULES.join(', ')}`)
    const tokens = p.ai_tokens_monthly ?? defaultAiTokens(modules as PlanSeed['ai_modules'], defaultTokens)
    if (!Number.isSafeInteger(tokens) || (tokens as number) < 0) fail('ai_tokens_monthly', 'must be a whole number of tokens, 0 or more')
    return {
      slug, name: plainName(str('name'), () => fail('name', 'must be plain text, at most 100 characters: no control characters (tab, newline, ESC...) and no unpaired surrogates')), track, hosting_type: hostingType,
      price_monthly: price as number,
      price_annual: typeof p.price_annual === 'number' ? p.price_annual : undefined,
      max_sites: int('max_sites', 1),
      ai_modules: modules as PlanSeed['ai_modules'],
      free_domain_annual: p.free_domain_annual === true,
      memory_mb: int('memory_mb', 64), cpu_cores: int('cpu_cores', 1), disk_gb: int('disk_gb', 1),
      ai_tokens_monthly: tokens as number,
      deprecated: p.deprecated === true,
    }
  })
}

const PLAN_FIELDS = ['slug', 'name', 'track', 'hosting_type', 'price_monthly', 'price_annual', 'max_sites', 'ai_modules', 'free_domain_annual', 'memory_mb', 'cpu_cores', 'disk_gb', 'ai_tokens_monthly', 'deprecated']

export const PLAN_SLUG = /^[a-z0-9][a-z0-9-]{0,38}[a-z0-9]$/

/** A plan's display name as it may appear on pages and in answers: plain text, at most 100 characters. */
function plainName(name: string, fail: () => never): string {
  if (name.length > 100 || /[\u0000-\u001f\u007f-\u009f]/.test(name) || !name.isWellFormed()) fail()
  return name
}
