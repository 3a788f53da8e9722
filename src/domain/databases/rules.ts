import type { DbEngine } from './ports'
import { invalid } from '../errors'

/** A database's name (docs/api.md, "Databases"): its name in the engine, its host `db-{name}` and its variable `{NAME}_URL`. */
export const DB_NAME_PATTERN = '^[a-z][a-z0-9_]{0,30}$'
const NAME = new RegExp(DB_NAME_PATTERN)
/** Names no database may take: `DATABASE_URL` is the first database's variable, never `{NAME}_URL`'s. */
export const RESERVED_DB_NAMES: readonly string[] = ['database']
/** The user each database's server has for the site (redis: its ACL user; `default` is off). */
export const DB_USER = 'site'
/** Characters of a generated password, all of [A-Za-z0-9]: safe in a URL as they are. */
export const PASSWORD_CHARS = 32
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

/** The port each engine's server listens on, on the site's network only (nothing is published on the host). */
export const DB_PORTS: Readonly<Record<DbEngine, number>> = { postgres: 5432, mariadb: 3306, redis: 6379 }
const SCHEMES: Readonly<Record<DbEngine, string>> = { postgres: 'postgres', mariadb: 'mysql', redis: 'redis' }

/** Throws invalid on `name` unless it is a name a database may have. */
export function checkDbName(name: string): void {
  if (!NAME.test(name)) {
    throw invalid('name', `'${name.length > 40 ? `${name.slice(0, 37)}...` : name}' is not a database name: use 1 to 31 lowercase letters, digits and underscores, starting with a letter (e.g. main).`)
  }
  if (RESERVED_DB_NAMES.includes(name)) throw invalid('name', `'${name}' is reserved (the first database already gives DATABASE_URL); choose another name, such as main.`)
}

/** The host the site's containers reach the database at: its alias on the site's own network. */
export const hostOf = (name: string) => `db-${name}`
/** What the database's server calls it: the name (redis: its db 0). */
export const databaseOf = (engine: DbEngine, name: string) => (engine === 'redis' ? '0' : name)

/** The connection URL the app gets: postgres://site:PW@db-main:5432/main, mysql://..., redis://site:PW@db-cache:6379/0. */
export function urlOf(engine: DbEngine, name: string, password: string): string {
  return `${SCHEMES[engine]}://${DB_USER}:${password}@${hostOf(name)}:${DB_PORTS[engine]}/${databaseOf(engine, name)}`
}

/** The variable a database gives the site: MAIN_URL for `main`. */
export const variableOf = (name: string) => `${name.toUpperCase()}_URL`
/** The variable the site's first database (the oldest not deleted) also gives. */
export const FIRST_DB_VARIABLE = 'DATABASE_URL'

/** A new password: PASSWORD_CHARS characters of [A-Za-z0-9], each drawn uniformly from the system's random source. */
export function newPassword(): string {
  let out = ''
  const bytes = new Uint8Array(64)
  while (out.length < PASSWORD_CHARS) {
    crypto.getRandomValues(bytes)
    for (const b of bytes) {
      // 248 = 4 * 62: the bytes above it would favour the first characters.
      if (b < 248 && out.length < PASSWORD_CHARS) out += ALPHABET[b % 62]
    }
  }
  return out
}

/** The states of a database that has a server (a container and a volume) Berth keeps: its URL holds in each. */
export const HAS_SERVER: ReadonlySet<string> = new Set(['available', 'stopped', 'recovering'])
