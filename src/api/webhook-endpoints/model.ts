import { t } from 'elysia'
import { WebhookDelivery, WebhookEndpoint, WebhookEndpointWithSecret } from '../../domain/webhooks'
import { MAX_WEBHOOK_URL_LENGTH } from '../../domain/webhooks'
import { Body, Query, QueryInteger } from '../http/schemas'
export { WebhookDelivery, WebhookEndpoint, WebhookEndpointWithSecret }

const Url = t.String({
  minLength: 1,
  maxLength: MAX_WEBHOOK_URL_LENGTH,
  description: "Where the events are POSTed: an https:// URL (http:// only to a network the hoster lists in outbound.allow_networks) whose host resolves to a public address; no user, password or #fragment. Checked again at every delivery.",
  examples: ['https://agent.example.com/hooks/berth'],
})
const Types = t.Array(t.String({ maxLength: 100 }), {
  maxItems: 100,
  description: 'The event types to send (docs/api.md, "Events"); empty or left out: every type.',
  examples: [['deployment.succeeded', 'deployment.failed']],
})

export const CreateWebhookBody = Body({ url: Url, types: t.Optional(Types) }, { description: 'A webhook endpoint of the account.' })

export const UpdateWebhookBody = Body({
  url: t.Optional(Url),
  types: t.Optional(Types),
  state: t.Optional(t.Union([t.Literal('active'), t.Literal('disabled')], {
    description: 'active: sends again (after a disable, the deliveries it missed are listed as failed: redeliver them); disabled: stops sending (pending deliveries are marked failed).',
    error: 'must be active or disabled',
  })),
}, { description: 'What to change; what is left out stays.' })

const Id = (prefix: string, description: string) => t.String({ pattern: `^${prefix}[0-9a-f]{24}$`, description, error: `must be ${prefix} and 24 hex characters`, examples: [`${prefix}3f9a0c1d2e4b5a6978c0d1e2`] })
export const WebhookParams = t.Object({ webhook_id: Id('we_', "The endpoint's id.") })
export const DeliveryParams = t.Object({ webhook_id: Id('we_', "The endpoint's id."), delivery_id: Id('wd_', "The delivery's id.") })

export const DeliveryListQuery = Query({
  limit: t.Optional(QueryInteger('limit', { minimum: 1, maximum: 100, default: 50, description: 'How many of the newest deliveries to return.' })),
  before: t.Optional(t.String({ pattern: '^wd_[0-9a-f]{24}$', description: "A delivery's id: the deliveries older than it (send the last one of a page for the next page).", error: 'must be wd_ and 24 hex characters', examples: ['wd_3f9a0c1d2e4b5a6978c0d1e2'] })),
})
