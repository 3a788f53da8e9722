import { Elysia } from 'elysia'
import { NoBody, ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { SiteParams } from '../sites/model'
import { type ConsoleService, ConsoleTicket } from '../../domain/console'

const tags = ['Console']

export const consoleRoutes = (plugins: ApiPlugins, consoles: ConsoleService) =>
  new Elysia({ name: 'console-routes' })
    .use(plugins)
    .post('/sites/:tenant_slug/console/', ({ site, principal, set }) => {
      const answer = consoles.open(principal, site)
      set.status = 201
      return answer
    }, {
      scope: 'write',
      site: 'changeable',
      params: SiteParams,
      body: NoBody,
      response: ok(ConsoleTicket, 201),
      // 429: the site has its most console sessions open, or the site or account its most unused
      // tickets, or the account asked for its most tickets in ten minutes (domain/console/tickets.ts);
      // 503: the box holds its most unused tickets.
      errors: [429, 503],
      detail: { tags, summary: 'Open a console: a single-use ticket (60 s) for a shell in the site over a WebSocket, and a terminal page for a person', operationId: 'openConsole' },
    })
