import { Elysia } from 'elysia'
import { NoBody, ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { SiteParams } from '../sites/model'
import type { ConsoleService } from '../../domain/console/service'
import { ConsoleTicket } from '../../domain/console/views'

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
      // The site has its most console sessions open.
      errors: [429],
      detail: { tags, summary: 'Open a console: a single-use ticket (60 s) for a shell in the site over a WebSocket, and a terminal page for a person', operationId: 'openConsole' },
    })
