import { t } from 'elysia'
import { DbEngineSchema } from '../../core/enums'
import { Database, DatabaseLog, DatabaseWithUrl, DB_NAME_PATTERN, RESERVED_DB_NAMES } from '../../domain/databases'
import { Body, Query, QueryInteger, Text, Uuid } from '../http/schemas'
import { SiteParams } from '../sites/model'
import { MAX_SEARCH_LENGTH } from '../logs/model'
export { Database, DatabaseLog, DatabaseWithUrl }

export const DatabaseParams = t.Object({ ...SiteParams.properties, name: t.String({ maxLength: 100, description: 'The database\'s name.', examples: ['main'] }) })

/** The body of createDatabase: the schema checks the shape and the name's form; the service the reserved names and the plan. */
export const CreateDatabaseBody = Body({
  engine: t.Union([...DbEngineSchema.anyOf], {
    description: "postgres (PostgreSQL 15), mariadb (MariaDB 10.11) or redis (Redis 7.0); the plan's features.databases.engines says which it has.",
    error: 'must be one of postgres, mariadb, redis',
    examples: ['postgres'],
  }),
  name: t.String({
    pattern: DB_NAME_PATTERN,
    minLength: 1,
    maxLength: 31,
    description: `1 to 31 lowercase letters, digits and underscores, starting with a letter; unique among the site's databases (a deleted one keeps its name through the grace); not ${RESERVED_DB_NAMES.join(', ')}. It is the database's name in the server, its host db-{name}, and its variable {NAME}_URL.`,
    error: 'must be 1 to 31 lowercase letters, digits and underscores, starting with a letter (e.g. main)',
    examples: ['main'],
  }),
}, { description: 'A managed database for the site.' })

/** The body of restoreDatabase: an archive to take the data from, or none to bring a deleted database back. */
export const RestoreDatabaseBody = Body({
  archive_id: t.Optional(Uuid("A snapshot's or backup's id (listSnapshots, listBackups) holding the database's dump; its data replaces the database's. Without it: a deleted database in its grace comes back as it was.")),
}, { description: 'None (a deleted database back as it was), or the archive to restore the data from.' })

/** The query of getDatabaseLogs: as getSiteLogs's lines and search. */
export const DatabaseLogQuery = Query({
  lines: t.Optional(QueryInteger('lines', { minimum: 1, maximum: 500, default: 100, description: 'How many of the newest matching lines to return.' })),
  search: t.Optional(Text({ maxLength: MAX_SEARCH_LENGTH, description: 'Only lines containing this text (plain, case-sensitive substring), among the newest 10,000.' })),
})
