import { eq } from 'drizzle-orm'
import { sites } from '../../store/schema'
import type { Store } from '../../store/store'

/** The AI modules' flags of each site (the `modules` JSON column of `sites`). */
export class ModulesRepository {
  constructor(private store: Store) {}

  /** Sets the module `name` of the site on or off, keeping its other flags; call inside `store.write`. */
  setFlag(siteId: string, name: string, on: boolean, now: number): void {
    const row = this.store.db.select({ modules: sites.modules }).from(sites).where(eq(sites.id, siteId)).get()!
    const modules = { ...(JSON.parse(row.modules) as Record<string, boolean>), [name]: on }
    this.store.db.update(sites).set({ modules: JSON.stringify(modules), updatedAt: now }).where(eq(sites.id, siteId)).run()
  }
}
