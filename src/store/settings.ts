import { eq } from 'drizzle-orm'
import { settings } from './schema'
import type { Store } from './store'

/*
 * The installation's own settings (the `settings` table): its id and its secrets, each made on
 * first use and kept for good.
 */

/** A random secret of this installation (32 bytes), created on first use and kept in the store. */
export function secretOf(store: Store, key: string): Buffer {
  return store.write(() => {
    const row = store.db.select().from(settings).where(eq(settings.key, key)).get()
    if (row) return Buffer.from(row.value, 'hex')
    const secret = Buffer.from(crypto.getRandomValues(new Uint8Array(32)))
    store.db.insert(settings).values({ key, value: secret.toString('hex') }).run()
    return secret
  })
}

/**
 * The installation's id, or null before the first start. It is in the name and the
 * `dev.berth.instance` label of every container, network and volume Berth makes (`berth instance`).
 */
export function readInstanceId(store: Store): string | null {
  return store.db.select().from(settings).where(eq(settings.key, 'instance_id')).get()?.value ?? null
}

/** The installation's random id, created on first start and kept in the store. */
export function instanceIdOf(store: Store): string {
  return store.write(() => {
    const existing = readInstanceId(store)
    if (existing) return existing
    const id = Buffer.from(crypto.getRandomValues(new Uint8Array(4))).toString('hex')
    store.db.insert(settings).values({ key: 'instance_id', value: id }).run()
    return id
  })
}

/** A setting's value, or null when it was never set. */
export function readSetting(store: Store, key: string): string | null {
  return store.db.select().from(settings).where(eq(settings.key, key)).get()?.value ?? null
}

/**
 * Keeps `value` under `key` unless a value is there already; answers the one kept. For a value
 * made outside a transaction (an age identity is made asynchronously): the first process to keep
 * one wins, and every other uses it.
 */
export function keepSetting(store: Store, key: string, value: string): string {
  return store.write(() => {
    store.db.insert(settings).values({ key, value }).onConflictDoNothing().run()
    return readSetting(store, key)!
  })
}
