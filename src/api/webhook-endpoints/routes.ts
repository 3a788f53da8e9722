import { Elysia, t } from 'elysia'
import { NoBody, ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { CreateWebhookBody, DeliveryListQuery, DeliveryParams, UpdateWebhookBody, WebhookDelivery, WebhookEndpoint, WebhookEndpointWithSecret, WebhookParams } from './model'
import type { WebhooksService } from '../../domain/webhooks'

const tags = ['Webhooks']

/**
 * The account's webhook endpoints (issue 41; docs/api.md "Webhooks"), admin scope: events POSTed,
 * signed per the Standard Webhooks specification, retried for three days. Not the payment
 * processor's inbound webhooks (api/webhooks/, outside /api/v1). Another account's endpoint is 404.
 */
export const webhookEndpointRoutes = (plugins: ApiPlugins, webhooks: WebhooksService) =>
  new Elysia({ name: 'webhook-endpoint-routes' })
    .use(plugins)
    .get('/webhooks/', ({ principal }) => webhooks.list(principal.accountId), {
      scope: 'admin',
      response: ok(t.Array(WebhookEndpoint)),
      detail: { tags, summary: "The account's webhook endpoints, oldest first (secrets never shown here)", operationId: 'listWebhookEndpoints' },
    })
    .post('/webhooks/', async ({ principal, body, set }) => {
      const made = await webhooks.create(principal.accountId, body)
      set.status = 201
      return made
    }, {
      scope: 'admin',
      body: CreateWebhookBody,
      response: ok(WebhookEndpointWithSecret, 201),
      errors: [409],
      detail: {
        tags,
        summary: 'Add a webhook endpoint; its signing secret is in the answer, and only there',
        description:
          "The account's events of the types given (all when none) are POSTed to the URL as JSON (the event as listEvents shows it), with the Standard Webhooks headers webhook-id (the event's id, the same on every attempt), webhook-timestamp and webhook-signature. " +
          "A 2xx answer within 15 s is a success; anything else is retried for three days (docs/api.md, \"Webhooks\"). " +
          "A URL whose host resolves to a loopback, private, link-local or Berth's own address: 422 BLOCKED_ADDRESS, param url. At most 10 endpoints: 409.",
        operationId: 'createWebhookEndpoint',
      },
    })
    .get('/webhooks/:webhook_id/', ({ principal, params }) => webhooks.get(principal.accountId, params.webhook_id), {
      scope: 'admin',
      params: WebhookParams,
      errors: [404],
      response: ok(WebhookEndpoint),
      detail: { tags, summary: 'One webhook endpoint: its URL, types, state and why it was disabled', operationId: 'getWebhookEndpoint' },
    })
    .patch('/webhooks/:webhook_id/', ({ principal, params, body }) => webhooks.update(principal.accountId, params.webhook_id, body), {
      scope: 'admin',
      params: WebhookParams,
      errors: [404],
      body: UpdateWebhookBody,
      response: ok(WebhookEndpoint),
      detail: { tags, summary: 'Change its URL or types, or disable it or enable it again', operationId: 'updateWebhookEndpoint' },
    })
    .delete('/webhooks/:webhook_id/', ({ principal, params }) => webhooks.delete(principal.accountId, params.webhook_id), {
      scope: 'admin',
      params: WebhookParams,
      errors: [404],
      body: NoBody,
      response: ok(WebhookEndpoint),
      detail: { tags, summary: 'Delete a webhook endpoint and its deliveries; nothing more is sent to it', operationId: 'deleteWebhookEndpoint' },
    })
    .post('/webhooks/:webhook_id/rotate-secret/', ({ principal, params }) => webhooks.rotateSecret(principal.accountId, params.webhook_id), {
      scope: 'admin',
      params: WebhookParams,
      errors: [404],
      body: NoBody,
      response: ok(WebhookEndpointWithSecret),
      detail: {
        tags,
        summary: 'A new signing secret, shown once; for 24 h deliveries carry a signature with the old one too',
        description: 'webhook-signature holds "v1,<new> v1,<old>" until previous_secret_expires_at, so a receiver can switch secrets without missing a delivery.',
        operationId: 'rotateWebhookSecret',
      },
    })
    .get('/webhooks/:webhook_id/deliveries/', ({ principal, params, query }) => webhooks.deliveries(principal.accountId, params.webhook_id, query.limit ?? 50, query.before), {
      scope: 'admin',
      params: WebhookParams,
      errors: [404],
      query: DeliveryListQuery,
      response: ok(t.Array(WebhookDelivery)),
      detail: {
        tags,
        summary: "The endpoint's deliveries, newest first: status, attempts, the last answer's code and error",
        description: 'Older ones page by page: send the last delivery\'s id as before; an empty list is the end. A before that is not one of this endpoint\'s deliveries: 422 param before.',
        operationId: 'listWebhookDeliveries',
      },
    })
    .post('/webhooks/:webhook_id/deliveries/:delivery_id/redeliver/', ({ principal, params }) => webhooks.redeliver(principal.accountId, params.webhook_id, params.delivery_id), {
      scope: 'admin',
      params: DeliveryParams,
      body: NoBody,
      response: ok(WebhookDelivery),
      errors: [404, 409],
      detail: {
        tags,
        summary: 'Send a delivery again (same event, same webhook-id), in its place in the endpoint\'s order',
        description: 'A pending delivery, or one of a disabled endpoint: 409.',
        operationId: 'redeliverWebhook',
      },
    })
