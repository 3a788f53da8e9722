import type { PlanSeed } from './schema'

/**
 * The embedded default catalog, seeded into the store on first start when the config file has no
 * `[[plans]]`. One plan per hosting type on the single-site track, two agency plans and one
 * deprecated plan (hidden from `GET /plans/` unless `include_deprecated=true`). Prices are CAD;
 * annual is ten times monthly (design.md, Plans).
 *
 * `ai_tokens_monthly` is per site and grows with the plan's price. 0 where no module calls the
 * model (seo works without one). Business, 100,000: its chatbot's model-written answers cost about
 * 1,000 tokens each (three passages, the question, a short answer), so some 100 a month, search
 * answers after that. Agency, 200,000: about 80 pages from briefs (up to 2,000 tokens written
 * each). Performance and Agency VPS, 500,000: translation too, where a 20 KB page costs some
 * 10,000 tokens per language, read and written, and only again when the page changes. Agency VPS
 * at its 25 sites may spend 12.5 million tokens a month: under 10 CAD at a small hosted model such as
 * gpt-4o-mini, against its 129 CAD.
 */
export const DEFAULT_PLANS: PlanSeed[] = [
  {
    slug: 'starter', name: 'Starter', track: 'single_site', hosting_type: 'shared',
    price_monthly: 7, max_sites: 1, ai_modules: ['seo'], free_domain_annual: false,
    memory_mb: 256, cpu_cores: 1, disk_gb: 5, ai_tokens_monthly: 0,
  },
  {
    slug: 'business', name: 'Business VPS', track: 'single_site', hosting_type: 'vps',
    price_monthly: 24, max_sites: 1, ai_modules: ['chatbot', 'seo'], free_domain_annual: true,
    memory_mb: 1024, cpu_cores: 1, disk_gb: 20, ai_tokens_monthly: 100_000,
  },
  {
    slug: 'performance', name: 'Performance Dedicated', track: 'single_site', hosting_type: 'dedicated',
    price_monthly: 89, max_sites: 1, ai_modules: ['chatbot', 'seo', 'translation', 'content'],
    free_domain_annual: true, memory_mb: 4096, cpu_cores: 2, disk_gb: 80, ai_tokens_monthly: 500_000,
  },
  {
    slug: 'agency', name: 'Agency', track: 'agency', hosting_type: 'shared',
    price_monthly: 39, max_sites: 10, ai_modules: ['seo', 'content'], free_domain_annual: false,
    memory_mb: 512, cpu_cores: 1, disk_gb: 10, ai_tokens_monthly: 200_000,
  },
  {
    slug: 'agency-vps', name: 'Agency VPS', track: 'agency', hosting_type: 'vps',
    price_monthly: 129, max_sites: 25, ai_modules: ['chatbot', 'seo', 'translation', 'content'],
    free_domain_annual: true, memory_mb: 1024, cpu_cores: 1, disk_gb: 20, ai_tokens_monthly: 500_000,
  },
  {
    slug: 'legacy-basic', name: 'Basic (legacy)', track: 'single_site', hosting_type: 'shared',
    price_monthly: 5, max_sites: 1, ai_modules: [], free_domain_annual: false,
    memory_mb: 128, cpu_cores: 1, disk_gb: 2, ai_tokens_monthly: 0, deprecated: true,
  },
]

/** Where `berth serve` looks for its config when neither `--config` nor `BERTH_CONFIG` names one. */
export const SYSTEM_CONFIG_PATH = '/etc/berth/berth.toml'
