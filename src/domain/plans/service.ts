import { APP_RUNTIMES, type AiModule, type DbEngineName, type HostingType, type Track } from '../../core/enums'
import type { PlanSeed } from '../../config/schema'
import type { PlanRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { invalid, notFound, op, say } from '../errors'
import type { Plan } from './views'
import type { PlansRepository } from './repository'
import { toDollars } from '../../core/money'

/**
 * What each hosting type allows of managed databases (issue 40, docs/api.md "Databases"): how
 * many a site may have at once (deleted ones in their grace do not count), which engines, and
 * each database's own memory limit and disk, on top of the site's memory_mb and disk_gb. Each
 * database may use up to the plan's cpu_cores.
 */
export const DATABASE_FEATURES: Readonly<Record<HostingType, { max: number; engines: DbEngineName[]; memory_mb: number; disk_gb: number }>> = {
  shared: { max: 1, engines: ['mariadb', 'postgres'], memory_mb: 256, disk_gb: 1 },
  vps: { max: 3, engines: ['mariadb', 'postgres', 'redis'], memory_mb: 512, disk_gb: 5 },
  dedicated: { max: 10, engines: ['mariadb', 'postgres', 'redis'], memory_mb: 2048, disk_gb: 20 },
}

/**
 * The public catalog. Plans are read on every listPlans, every checkout and every site view, and
 * change only through `berth plans ...` (which berth serve runs for the command, over its admin
 * socket), so the service keeps them in memory and reloads them when the catalog changed
 * (`PlansRepository.changes`), not on every write to the store.
 */
export class PlansService {
  private cache: { version: number; plans: Plan[]; json: Map<string, string> } | undefined

  constructor(private repo: PlansRepository, private store: Store, private prefix: string) {}

  /** The catalog in order; deprecated plans only when asked. */
  list(filter: { track?: Track; includeDeprecated?: boolean } = {}): Plan[] {
    return this.all().filter((p) => (filter.includeDeprecated || !p.deprecated) && (!filter.track || p.track === filter.track))
  }

  /**
   * `list(filter)` serialized as JSON, kept until the catalog changes: listPlans answers the
   * same bytes every time, and serializing (and checking) them once is what brings the route to
   * 0.8 of a bare Bun.serve (bench/, issue 2).
   */
  listJson(filter: { track?: Track; includeDeprecated?: boolean } = {}): string {
    const key = `${filter.track ?? ''}|${filter.includeDeprecated ? 1 : 0}`
    const cache = this.all() && this.cache!
    let json = cache.json.get(key)
    if (json === undefined) cache.json.set(key, (json = JSON.stringify(this.list(filter))))
    return json
  }

  /** One plan, deprecated or not; NotFoundError when unknown. */
  get(slug: string): Plan {
    const plan = this.all().find((p) => p.slug === slug)
    if (!plan) throw notFound(say`No plan '${slug}'; ${op('listPlans')} lists the plans on sale.`, 'plan_slug')
    return plan
  }

  /** A plan that can be bought or moved to: known and not deprecated, else invalid on `param`. */
  requireActive(slug: string, param: string): Plan {
    const plan = this.all().find((p) => p.slug === slug)
    if (!plan) throw invalid(param, say`No plan '${slug}'; ${op('listPlans')} lists the plans on sale.`)
    if (plan.deprecated) throw invalid(param, say`Plan '${slug}' is deprecated and no longer sold; pick one from ${op('listPlans')}.`)
    return plan
  }

  add(seed: PlanSeed): Plan {
    if (this.repo.find(seed.slug)) throw invalid('slug', `Plan '${seed.slug}' already exists.`)
    return this.toPlan(this.repo.insert(seed))
  }

  setDeprecated(slug: string, deprecated: boolean): Plan {
    const row = this.repo.setDeprecated(slug, deprecated)
    if (!row) throw notFound(`No plan '${slug}'.`, 'plan_slug')
    return this.toPlan(row)
  }

  private all(): Plan[] {
    const version = this.repo.changes
    if (this.cache?.version !== version) this.cache = { version, plans: this.repo.all().map((r) => this.toPlan(r)), json: new Map() }
    return this.cache.plans
  }

  private toPlan(row: PlanRow): Plan {
    const premium = row.hostingType === 'vps' || row.hostingType === 'dedicated'
    return {
      slug: row.slug,
      name: row.name,
      track: row.track as Plan['track'],
      hosting_type: row.hostingType as Plan['hosting_type'],
      price: { monthly: toDollars(row.priceMonthlyCents), annual: toDollars(row.priceAnnualCents), currency: 'CAD' },
      features: {
        max_sites: row.maxSites,
        ai_modules: JSON.parse(row.aiModules) as AiModule[],
        free_domain_annual: row.freeDomainAnnual,
        memory_mb: row.memoryMb,
        cpu_cores: row.cpuCores,
        disk_gb: row.diskGb,
        ai_tokens_monthly: row.aiTokensMonthly,
        snapshots: premium,
        ssh: premium,
        runtimes: [...APP_RUNTIMES],
        databases: databasesOf(row.hostingType as HostingType),
      },
      skus: { monthly: `${this.prefix}_${row.slug}_monthly`, annual: `${this.prefix}_${row.slug}_annual` },
      deprecated: row.deprecated,
    }
  }
}

function databasesOf(type: HostingType): Plan['features']['databases'] {
  const f = DATABASE_FEATURES[type] ?? DATABASE_FEATURES.shared
  return { max: f.max, engines: [...f.engines], memory_mb: f.memory_mb, disk_gb: f.disk_gb }
}
