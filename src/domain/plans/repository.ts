import { asc, eq, sql } from 'drizzle-orm'
import type { PlanSeed } from '../../config/schema'
import type { Clock } from '../../lib/clock'
import { plans, settings, type PlanRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { toCents } from '../../core/money'

const SEEDED_KEY = 'plans_seeded_at'

/** Changes made to the catalog by this process (any store): `PlansRepository.changes`. */
let catalogChanges = 0

/** Reads and writes the plan catalog. Prices go in as CAD and are stored as cents. */
export class PlansRepository {
  constructor(private store: Store, private clock: Clock) {}

  /**
   * A number that moves whenever this process changes the catalog (only this class writes the
   * plans table, and only berth serve writes the store): it tells a cache of the catalog when to
   * reload, without reloading on every other write (each fresh GET /sites/ did: bench:lists, issue 22).
   */
  get changes(): number {
    return catalogChanges
  }

  all(): PlanRow[] {
    return this.store.db.select().from(plans).orderBy(asc(plans.position)).all()
  }

  find(slug: string): PlanRow | undefined {
    return this.store.db.select().from(plans).where(eq(plans.slug, slug)).get()
  }

  /** Inserts the seed catalog once, the first time the store is opened; later edits stay. */
  seedOnce(seed: PlanSeed[]): boolean {
    return this.store.write(() => {
      const done = this.store.db.select().from(settings).where(eq(settings.key, SEEDED_KEY)).get()
      if (done) return false
      for (const plan of seed) {
        if (!this.find(plan.slug)) this.insertRow(plan)
      }
      this.store.db.insert(settings).values({ key: SEEDED_KEY, value: new Date(this.clock.now()).toISOString() }).run()
      return true
    })
  }

  insert(plan: PlanSeed): PlanRow {
    return this.store.write(() => this.insertRow(plan))
  }

  setDeprecated(slug: string, deprecated: boolean): PlanRow | undefined {
    return this.store.write(() => {
      catalogChanges++
      return this.store.db.update(plans).set({ deprecated, updatedAt: this.clock.now() }).where(eq(plans.slug, slug)).returning().get()
    })
  }

  private insertRow(plan: PlanSeed): PlanRow {
    catalogChanges++
    const now = this.clock.now()
    const position = this.store.db.select({ n: sql<number>`coalesce(max(${plans.position}), -1) + 1` }).from(plans).get()!.n
    return this.store.db.insert(plans).values({
      slug: plan.slug,
      name: plan.name,
      track: plan.track,
      hostingType: plan.hosting_type,
      priceMonthlyCents: toCents(plan.price_monthly),
      priceAnnualCents: toCents(plan.price_annual ?? plan.price_monthly * 10),
      maxSites: plan.max_sites,
      aiModules: JSON.stringify(plan.ai_modules),
      freeDomainAnnual: plan.free_domain_annual,
      memoryMb: plan.memory_mb,
      cpuCores: plan.cpu_cores,
      diskGb: plan.disk_gb,
      aiTokensMonthly: plan.ai_tokens_monthly,
      deprecated: plan.deprecated ?? false,
      position,
      createdAt: now,
      updatedAt: now,
    }).returning().get()
  }
}

export { toCents }
