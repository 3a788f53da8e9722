import { sql, type Column, type SQL } from 'drizzle-orm'

/**
 * `column IN (...)` over a list given as one JSON-array parameter (`json_each`), so that a read of
 * any number of ids is one statement, prepared once and kept. Bind it as `{ [name]: JSON.stringify(ids) }`.
 * Lists are read this way because a drizzle query built and compiled on every call cost about
 * four times the read itself for a list of 100 sites (bench:lists, issue 22), and `IN (?, ?, ...)`
 * is a new statement for every length.
 */
export const inJsonList = (column: Column, name: string): SQL => sql`${column} IN (SELECT value FROM json_each(${sql.placeholder(name)}))`

/**
 * A value made on its first use and kept: for prepared statements, which can only be made once
 * the store is migrated (repositories are built before that in some tests and tools).
 */
export function onFirstUse<T>(make: () => T): () => T {
  let value: T | undefined
  return () => (value ??= make())
}
