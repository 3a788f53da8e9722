import { iso } from '../../lib/clock'
import type { SiteRow } from '../../store/schema'
import type { Principal } from '../keys'
import type { ConsoleSessions } from './sessions'
import type { ConsoleTickets } from './tickets'
import type { ConsoleTicketView } from './views'

/** Where the console's page and WebSocket live, beneath Berth's own origin. */
export const CONSOLE_PATH = '/console/'

export interface ConsoleServiceDeps {
  tickets: ConsoleTickets
  sessions: Pick<ConsoleSessions, 'requireRoom'>
  /** Berth's public origin (config `server.site_url`): the page's and the WebSocket's. */
  siteUrl: string
}

/**
 * openConsole: a ticket for a console of the caller's site, and where to use it. Refused (429)
 * when the site has its most sessions open already, so that a caller learns it before connecting.
 */
export class ConsoleService {
  private pageBase: string
  private socketBase: string

  constructor(private d: ConsoleServiceDeps) {
    const origin = new URL(d.siteUrl)
    this.pageBase = `${origin.origin}${CONSOLE_PATH}`
    this.socketBase = `${origin.protocol === 'https:' ? 'wss:' : 'ws:'}//${origin.host}${CONSOLE_PATH}`
  }

  open(caller: Principal, site: SiteRow): ConsoleTicketView {
    this.d.sessions.requireRoom(site.id, site.slug)
    const grant = { siteId: site.id, slug: site.slug, accountId: caller.accountId, keyId: caller.keyId, keyPrefix: caller.keyPrefix }
    const { ticket, expiresAt } = this.d.tickets.issue(grant)
    return {
      ticket,
      expires_at: iso(expiresAt),
      websocket_url: `${this.socketBase}${ticket}/socket`,
      page_url: `${this.pageBase}${ticket}`,
    }
  }
}
