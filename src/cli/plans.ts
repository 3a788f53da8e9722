import { checkPlans, ConfigError } from '../config/config'
import { AI_MODULES, HOSTING_TYPES, TRACKS } from '../core/enums'
import type { Plan } from '../api/plans/model'
import { viaServer } from './admin'
import { STORE_NOTE } from './sites'
import { COMMON_OPTIONS, STORE_OPTIONS, UsageError, type Command } from './command'
import { configFrom } from './config-flags'

function table(plans: Plan[]): string {
  const rows = [['SLUG', 'NAME', 'TRACK', 'TYPE', 'CAD/MONTH', 'CAD/YEAR', 'SITES', 'MODULES', 'AI TOKENS/MONTH', 'STATE']]
  for (const p of plans) {
    rows.push([p.slug, p.name, p.track, p.hosting_type, p.price.monthly.toFixed(2), p.price.annual.toFixed(2), String(p.features.max_sites), p.features.ai_modules.join(',') || '-', String(p.features.ai_tokens_monthly), p.deprecated ? 'deprecated' : 'on sale'])
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)))
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd()).join('\n')
}

export const plansListCommand: Command = {
  path: ['plans', 'list'],
  summary: 'List the plan catalog, deprecated plans included.',
  usage: 'berth plans list [--on-sale] [--data-dir DIR] [--config FILE] [--json]',
  description: STORE_NOTE,
  options: { 'on-sale': { type: 'boolean', help: 'Only plans that can be bought (hide deprecated).' }, ...STORE_OPTIONS, ...COMMON_OPTIONS },
  examples: ['berth plans list', 'berth plans list --json'],
  run(ctx) {
    return viaServer<Plan[]>(ctx, 'plans/list', { include_deprecated: ctx.values['on-sale'] !== true }, (plans) => {
      ctx.out.result(plans, () => table(plans))
      return 0
    }, { refusalExit: 2 })
  },
}

export const plansAddCommand: Command = {
  path: ['plans', 'add'],
  summary: 'Add a plan to the catalog; it is on sale at once (GET /plans/ shows it).',
  usage: 'berth plans add --slug SLUG --name NAME --track TRACK --hosting-type TYPE --monthly CAD [options]',
  description: STORE_NOTE,
  options: {
    slug: { type: 'string', value: 'SLUG', help: 'Identifier used in SKUs: lowercase letters, digits, hyphens (required).' },
    name: { type: 'string', value: 'NAME', help: 'Display name (required).' },
    track: { type: 'string', value: 'TRACK', help: `${TRACKS.join(' or ')} (required).` },
    'hosting-type': { type: 'string', value: 'TYPE', help: `${HOSTING_TYPES.join(', ')} (required).` },
    monthly: { type: 'string', value: 'CAD', help: 'Monthly price in CAD (required).' },
    annual: { type: 'string', value: 'CAD', help: 'Annual price in CAD (default: ten times monthly).' },
    'max-sites': { type: 'string', value: 'N', help: 'Sites allowed per subscription (default 1).' },
    'ai-modules': { type: 'string', value: 'LIST', help: `Comma-separated: ${AI_MODULES.join(',')} (default none).` },
    'free-domain-annual': { type: 'boolean', help: 'A first domain is free with annual billing.' },
    'memory-mb': { type: 'string', value: 'MB', help: 'Memory limit per site (default 256).' },
    'cpu-cores': { type: 'string', value: 'N', help: 'CPU limit per site (default 1).' },
    'disk-gb': { type: 'string', value: 'GB', help: 'Disk quota per site (default 5).' },
    'ai-tokens': { type: 'string', value: 'N', help: 'AI tokens each site may use per UTC month (default: ai.tokens_per_site_monthly when --ai-modules has chatbot, translation or content, else 0).' },
    ...STORE_OPTIONS,
    ...COMMON_OPTIONS,
  },
  examples: ['berth plans add --slug growth --name Growth --track single_site --hosting-type vps --monthly 19 --ai-modules seo,chatbot --ai-tokens 150000 --memory-mb 1024'],
  run(ctx) {
    const v = ctx.values as Record<string, string | boolean | undefined>
    const num = (name: string, fallback?: number) => {
      if (v[name] === undefined) return fallback
      const n = Number(v[name])
      if (!Number.isFinite(n)) throw new UsageError(`--${name} must be a number (got '${v[name]}')`)
      return n
    }
    for (const req of ['slug', 'name', 'track', 'hosting-type', 'monthly']) {
      if (v[req] === undefined) throw new UsageError(`--${req} is required; see berth plans add --help`)
    }
    const config = configFrom(ctx)
    let seed
    try {
      ;[seed] = checkPlans([{
        slug: v.slug, name: v.name, track: v.track, hosting_type: v['hosting-type'],
        price_monthly: num('monthly'), price_annual: num('annual'),
        max_sites: num('max-sites', 1),
        ai_modules: typeof v['ai-modules'] === 'string' ? v['ai-modules'].split(',').map((s) => s.trim()).filter(Boolean) : [],
        free_domain_annual: v['free-domain-annual'] === true,
        memory_mb: num('memory-mb', 256), cpu_cores: num('cpu-cores', 1), disk_gb: num('disk-gb', 5),
        ai_tokens_monthly: num('ai-tokens'),
      }], 'berth plans add', config.ai.tokensPerSiteMonthly)
    } catch (err) {
      if (err instanceof ConfigError) throw new UsageError(err.message.replace('berth plans add: plans[0].', '--').replace('ai_tokens_monthly', 'ai_tokens').replace(/_/g, '-'))
      throw err
    }
    return viaServer<Plan>(ctx, 'plans/add', { seed }, (plan) => {
      ctx.out.result(plan, () => `added plan ${plan.slug} (${plan.price.monthly.toFixed(2)} CAD/month, ${plan.features.ai_tokens_monthly} AI tokens a site a month, SKUs ${plan.skus.monthly}, ${plan.skus.annual})`)
      return 0
    }, { refusalExit: 2 })
  },
}

export const plansDeprecateCommand: Command = {
  path: ['plans', 'deprecate'],
  summary: 'Stop selling a plan. Existing sites keep it; GET /plans/ hides it unless include_deprecated=true.',
  usage: 'berth plans deprecate SLUG [--undo] [--data-dir DIR] [--config FILE] [--json]',
  description: STORE_NOTE,
  options: { undo: { type: 'boolean', help: 'Put the plan back on sale.' }, ...STORE_OPTIONS, ...COMMON_OPTIONS },
  examples: ['berth plans deprecate legacy-basic', 'berth plans deprecate legacy-basic --undo'],
  run(ctx) {
    const slug = ctx.positionals[0]
    if (!slug || ctx.positionals.length > 1) throw new UsageError('give exactly one plan slug; berth plans list shows them')
    return viaServer<Plan>(ctx, 'plans/deprecate', { slug, deprecated: ctx.values.undo !== true }, (plan) => {
      ctx.out.result(plan, () => `${plan.slug} is ${plan.deprecated ? 'deprecated (no longer sold)' : 'on sale again'}`)
      return 0
    }, { refusalExit: 2 })
  },
}
