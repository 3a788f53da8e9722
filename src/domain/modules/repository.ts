import { eq } from 'drizzle-orm'
import { sites } from '../../store/schema'
import type { Store } from '../../store/store'

/** The modules' state of each site: the `sites.modules` column, a JSON object of name to on/off. */
export class ModulesRepository {
  constructor(private store: Store) {}

  /** Sets one module of the site on or off, leaving the others as they are (one write). */
  setEnabled(siteId: string, name: string, enabled: boolean, at: number): void {
    this.store.write(() => {
      const row = this.store.db.select({ modules: sites.modules }).from(sites).where(eq(sites.id, siteId)).get()!
      const modules = { ...(JSON.parse(row.modules) as Record<string, boolean>), [name]: enabled }
      this.store.db.update(sites).set({ modules: JSON.stringify(modules), updatedAt: at }).where(eq(sites.id, siteId)).run()
    })
  }
}
