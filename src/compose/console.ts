/** The console (issue 26): tickets, the open sessions, and the openConsole operation. */
import type { AuditTrail } from '../domain/audit'
import { ConsoleService, ConsoleSessions, ConsoleTickets } from '../domain/console'
import { SITE_HOME } from '../drivers/runtime/site-container'
import type { CoreReads } from './core'

export interface Consoles {
  /** openConsole: a ticket for a site's console. */
  consoles: ConsoleService
  /** The tickets the console's page and WebSocket spend. */
  consoleTickets: ConsoleTickets
  /** The open sessions (src/console/socket.ts starts them; Berth's stop ends them). */
  consoleSessions: ConsoleSessions
}

export function buildConsoles(core: CoreReads<'config' | 'store' | 'clock' | 'log' | 'runtime', 'keys' | 'accounts' | 'sites'>, needs: { audit: AuditTrail }): Consoles {
  const { config, store, clock, log, runtime, repos } = core
  const tickets = new ConsoleTickets(clock, config.dev.consoleTicketSeconds * 1000)
  const sessions = new ConsoleSessions({
    clock, log, runtime, audit: needs.audit, home: SITE_HOME,
    keyActive: (grant) => {
      const key = repos.keys.find(grant.accountId, grant.keyId)
      return key !== undefined && key.revokedAt === null && repos.accounts.find(grant.accountId)?.status === 'active'
    },
    site: (siteId) => repos.sites.find(siteId),
    version: store.versionOf(['accounts', 'sites']),
  })
  return {
    consoles: new ConsoleService({
      tickets, sessions, siteUrl: config.server.siteUrl,
    }),
    consoleTickets: tickets,
    consoleSessions: sessions,
  }
}
