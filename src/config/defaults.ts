import type { PlanSeed } from './schema'

/**
 * The embedded default catalog, seeded into the store on first start when the config file has no
 * `[[plans]]`. One plan per hosting type on the single-site track, two agency plans and one
 * deprecated plan (hidden from `GET /plans/` unless `include_deprecated=true`). Prices are CAD;
 * annual is ten times monthly (design.md, Plans).
 */
export const DEFAULT_PLANS: PlanSeed[] = [
  {
    slug: 'starter', name: 'Starter', track: 'single_site', hosting_type: 'shared',
    price_monthly: 7, max_sites: 1, ai_modules: ['seo'], free_domain_annual: false,
    memory_mb: 256, cpu_cores: 1, disk_gb: 5,
  },
  {
    slug: 'business', name: 'Business VPS', track: 'single_site', hosting_type: 'vps',
    price_monthly: 24, max_sites: 1, ai_modules: ['chatbot', 'seo'], free_domain_annual: true,
    memory_mb: 1024, cpu_cores: 1, disk_gb: 20,
  },
  {
    slug: 'performance', name: 'Performance Dedicated', track: 'single_site', hosting_type: 'dedicated',
    price_monthly: 89, max_sites: 1, ai_modules: ['chatbot', 'seo', 'translation', 'content'],
    free_domain_annual: true, memory_mb: 4096, cpu_cores: 2, disk_gb: 80,
  },
  {
    slug: 'agency', name: 'Agency', track: 'agency', hosting_type: 'shared',
    price_monthly: 39, max_sites: 10, ai_modules: ['seo', 'content'], free_domain_annual: false,
    memory_mb: 512, cpu_cores: 1, disk_gb: 10,
  },
  {
    slug: 'agency-vps', name: 'Agency VPS', track: 'agency', hosting_type: 'vps',
    price_monthly: 129, max_sites: 25, ai_modules: ['chatbot', 'seo', 'translation', 'content'],
    free_domain_annual: true, memory_mb: 1024, cpu_cores: 1, disk_gb: 20,
  },
  {
    slug: 'legacy-basic', name: 'Basic (legacy)', track: 'single_site', hosting_type: 'shared',
    price_monthly: 5, max_sites: 1, ai_modules: [], free_domain_annual: false,
    memory_mb: 128, cpu_cores: 1, disk_gb: 2, deprecated: true,
  },
]

/** Where `berth serve` looks for its config when neither `--config` nor `BERTH_CONFIG` names one. */
export const SYSTEM_CONFIG_PATH = '/etc/berth/berth.toml'
