import { Elysia, t } from 'elysia'
import { NoBody, ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { SiteParams } from '../sites/model'
import { CreateDatabaseBody, Database, DatabaseLog, DatabaseLogQuery, DatabaseParams, DatabaseWithUrl, RestoreDatabaseBody } from './model'
import type { DatabaseArchives, DatabasesService } from '../../domain/databases'

const tags = ['Databases']

/**
 * The sites' managed databases (docs/api.md, "Databases"): PostgreSQL, MariaDB and Redis, each in
 * a container of its own on the site's network. Another account's site is 404 on every route.
 */
export const databaseRoutes = (plugins: ApiPlugins, databases: DatabasesService, archives: DatabaseArchives) =>
  new Elysia({ name: 'database-routes' })
    .use(plugins)
    .get('/sites/:tenant_slug/databases/', ({ site }) => databases.list(site), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      response: ok(t.Array(Database)),
      detail: { tags, summary: "The site's databases, oldest first (passwords never shown here)", operationId: 'listDatabases' },
    })
    .post('/sites/:tenant_slug/databases/', async ({ site, body, set }) => {
      const made = await databases.create(site, body)
      set.status = 201
      return made
    }, {
      scope: 'write',
      site: 'changeable',
      params: SiteParams,
      body: CreateDatabaseBody,
      response: ok(DatabaseWithUrl, 201),
      errors: [503],
      detail: {
        tags,
        summary: 'Create a database; answered once its server answers, with its URL and password (shown again only by reveal-password)',
        description:
          "The server runs in a container of its own on the site's private network (host db-{name}), with the plan's features.databases memory and disk on top of the site's. " +
          "The site's app, build, deploy hook and exec get {NAME}_URL, and DATABASE_URL for the first database; the app restarts with them. " +
          "Over the plan's limit or an engine it lacks: 403. The server not starting: 503 and nothing kept.",
        operationId: 'createDatabase',
      },
    })
    .get('/sites/:tenant_slug/databases/:name/', ({ site, params }) => databases.get(site, params.name), {
      scope: 'read',
      site: 'owned',
      params: DatabaseParams,
      response: ok(Database),
      detail: { tags, summary: 'One database: engine, version, state, size and where to connect', operationId: 'getDatabase' },
    })
    .get('/sites/:tenant_slug/databases/:name/logs/', ({ site, params, query }) => databases.logs(site, params.name, { lines: query.lines ?? 100, search: query.search || undefined }), {
      scope: 'read',
      site: 'owned',
      params: DatabaseParams,
      query: DatabaseLogQuery,
      response: ok(DatabaseLog),
      errors: [503],
      detail: {
        tags,
        summary: "The newest lines of the database's server log: starts, stops, errors, refused logins",
        description: "What the server writes (PostgreSQL's, MariaDB's or Redis's own log lines), read from its container, oldest first; the site's database passwords are masked. A database with no server now (deleted, failed) has none. The engine not answering: 503.",
        operationId: 'getDatabaseLogs',
      },
    })
    .delete('/sites/:tenant_slug/databases/:name/', ({ site, params }) => databases.delete(site, params.name), {
      scope: 'write',
      site: 'changeable',
      params: DatabaseParams,
      body: NoBody,
      response: ok(Database),
      detail: {
        tags,
        summary: "Delete a database: its server goes at once, its data is kept (and its name taken) until the site's own data goes",
        operationId: 'deleteDatabase',
      },
    })
    .post('/sites/:tenant_slug/databases/:name/reveal/', ({ site, params, principal }) => databases.reveal(site, params.name, { kind: 'key', keyId: principal.keyId, keyPrefix: principal.keyPrefix }), {
      scope: 'write',
      site: 'changeable',
      params: DatabaseParams,
      body: NoBody,
      response: ok(DatabaseWithUrl),
      detail: { tags, summary: "The database's URL with its password; recorded in the site's audit trail (logs, type audit)", operationId: 'revealDatabasePassword' },
    })
    .post('/sites/:tenant_slug/databases/:name/rotate-password/', ({ site, params, principal }) => databases.rotate(site, params.name, { kind: 'key', keyId: principal.keyId, keyPrefix: principal.keyPrefix }), {
      scope: 'write',
      site: 'changeable',
      params: DatabaseParams,
      body: NoBody,
      response: ok(DatabaseWithUrl),
      errors: [503],
      detail: {
        tags,
        summary: 'Give the database a new password: the old one stops working at once, the data stays, the app restarts with the new URL; audited',
        operationId: 'rotateDatabasePassword',
      },
    })
    .post('/sites/:tenant_slug/databases/:name/restore/', ({ site, params, body, principal }) => archives.restore(site, params.name, body?.archive_id, { kind: 'key', keyId: principal.keyId, keyPrefix: principal.keyPrefix }), {
      scope: 'write',
      site: 'changeable',
      params: DatabaseParams,
      body: RestoreDatabaseBody,
      response: ok(Database),
      errors: [503],
      detail: {
        tags,
        summary: "Restore one database: its data from a snapshot or backup of the site holding its dump (archive_id), or, without a body, a deleted database in its grace back as it was; audited",
        description:
          "With archive_id the database's data is replaced by the archive's dump (the site's files are left as they are; restoreSnapshot/restoreBackup put both back). " +
          "An archive without a dump of it: 422 param archive_id; another site's archive: 404. A deleted database counts against the plan's limit again.",
        operationId: 'restoreDatabase',
      },
    })
