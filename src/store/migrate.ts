import { MIGRATIONS, type Migration } from './migrations'
import type { Store } from './store'

export class MigrationError extends Error {}

/**
 * Applies the embedded migrations that the database has not seen, each in its own transaction,
 * and returns their ids. Refuses a database that a newer `berth` has migrated, rather than
 * running against tables it does not understand.
 */
export function migrate(store: Store, migrations: Migration[] = MIGRATIONS): string[] {
  store.sqlite.exec('CREATE TABLE IF NOT EXISTS berth_migrations (id TEXT PRIMARY KEY NOT NULL, applied_at INTEGER NOT NULL)')
  const applied = new Set(store.sqlite.query<{ id: string }, []>('SELECT id FROM berth_migrations').all().map((r) => r.id))
  const known = new Set(migrations.map((m) => m.id))
  const unknown = [...applied].filter((id) => !known.has(id))
  if (unknown.length > 0) {
    throw new MigrationError(`The database at ${store.path} was migrated by a newer berth (${unknown.join(', ')}); run that version or restore a backup.`)
  }
  const done: string[] = []
  for (const m of migrations) {
    if (applied.has(m.id)) continue
    store.write(() => {
      for (const statement of m.sql.split('--> statement-breakpoint')) {
        if (statement.trim()) store.sqlite.exec(statement)
      }
      store.sqlite.prepare('INSERT INTO berth_migrations (id, applied_at) VALUES (?, ?)').run(m.id, Date.now())
    })
    done.push(m.id)
  }
  return done
}

/** Ids of embedded migrations not yet applied, for `berth migrate --dry-run`. */
export function pendingMigrations(store: Store, migrations: Migration[] = MIGRATIONS): string[] {
  const exists = store.sqlite.query("SELECT 1 FROM sqlite_master WHERE name = 'berth_migrations'").get()
  if (!exists) return migrations.map((m) => m.id)
  const applied = new Set(store.sqlite.query<{ id: string }, []>('SELECT id FROM berth_migrations').all().map((r) => r.id))
  return migrations.filter((m) => !applied.has(m.id)).map((m) => m.id)
}
