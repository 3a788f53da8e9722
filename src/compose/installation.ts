/** The installation's files under `server.data_dir`, and the settings it keeps in the store. */
import { join } from 'node:path'
import type { Config } from '../config/config'
import { filesIn } from '../lib/private-file'

export const databasePath = (config: Config) => join(config.server.dataDir, 'berth.db')
/** Where the certificates Berth serves and their keys are kept, one pair per certificate. */
export const certificatesDir = (config: Config) => join(config.server.dataDir, 'tls', 'certs')
/** The ACME account's key and state. */
export const acmeDir = (config: Config) => join(config.server.dataDir, 'tls', 'acme')
/** The certificates and the ACME account together: what the tls copy off the box holds. */
export const tlsDir = (config: Config) => join(config.server.dataDir, 'tls')
/** The box key the sites' secrets are sealed with (drivers/secrets): outside the store, made at the first secret, carried by the copies off the box. */
export const secretsKeyPath = (config: Config) => join(config.server.dataDir, 'secrets.key')
/** Where copies of the store wait while they are sent off the box (0700; each file 0600). */
export const offsiteWorkDir = (config: Config) => join(config.server.dataDir, 'offsite-work')

/**
 * The files that hold secrets, kept 0600 (`berth serve` checks them at start): the store (the
 * portal's signing secret, key and token hashes) with its WAL and shared memory, the ACME account
 * key, each certificate's key (with the certificate, written the same way), and the box key of
 * the sites' secrets.
 */
export function secretFilesOf(config: Config): string[] {
  const db = databasePath(config)
  return [db, `${db}-wal`, `${db}-shm`, secretsKeyPath(config), ...filesIn(acmeDir(config)), ...filesIn(certificatesDir(config))]
}

// The settings it keeps in the store (its id and secrets) are read and written by store/settings.ts.
export { instanceIdOf, keepSetting, readInstanceId, readSetting, secretOf } from '../store/settings'
