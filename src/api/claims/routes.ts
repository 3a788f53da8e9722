import { Elysia } from 'elysia'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { ClaimBody, ClaimedKey, ClaimRequestBody, ClaimRequested } from './model'
import type { ClaimsService } from '../../domain/claims'

const tags = ['Keys']

export const claimRoutes = (plugins: ApiPlugins, claims: ClaimsService) =>
  new Elysia({ name: 'claim-routes' })
    .use(plugins)
    .post('/keys/claim/request/', async ({ body, set }) => {
      const requested = await claims.request(body.site_slug)
      set.status = 201
      return requested
    }, {
      public: true,
      rateLimit: 'claim_request',
      body: ClaimRequestBody,
      response: ok(ClaimRequested, 201),
      errors: [409, 503],
      detail: { tags, summary: "Have Berth's agent write a claim token into the site's files", operationId: 'requestClaim' },
    })
    .post('/keys/claim/', ({ body, set }) => {
      const claimed = claims.claim(body.claim_token)
      set.status = 201
      return claimed
    }, {
      public: true,
      rateLimit: 'claim',
      body: ClaimBody,
      response: ok(ClaimedKey, 201),
      detail: { tags, summary: 'Trade a claim token for a key bound to its site (read, write)', operationId: 'claimKey' },
    })
