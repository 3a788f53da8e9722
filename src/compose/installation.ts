/** The installation's files under `server.data_dir`, and the settings it keeps in the store. */
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import type { Config } from '../config/config'
import { filesIn } from '../lib/private-file'
import { settings } from '../store/schema'
import type { Store } from '../store/store'

export const databasePath = (config: Config) => join(config.server.dataDir, 'berth.db')
/** Where the certificates Berth serves and their keys are kept, one pair per certificate. */
export const certificatesDir = (config: Config) => join(config.server.dataDir, 'tls', 'certs')
/** The ACME account's key and state. */
export const acmeDir = (config: Config) => join(config.server.dataDir, 'tls', 'acme')

/**
 * The files that hold secrets, kept 0600 (`berth serve` checks them at start): the store (the
 * portal's signing secret, key and token hashes) with its WAL and shared memory, the ACME account
 * key, and each certificate's key (with the certificate, written the same way).
 */
export function secretFilesOf(config: Config): string[] {
  const db = databasePath(config)
  return [db, `${db}-wal`, `${db}-shm`, ...filesIn(acmeDir(config)), ...filesIn(certificatesDir(config))]
}

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
