import { Type as t, type Static } from '@sinclair/typebox'
import { DateTime, Nullable } from '../schema'
import type { WebhookDeliveryRow, WebhookEndpointRow } from './repository'

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

const endpointFields = {
  id: t.String({ description: '`we_` and 24 hex characters.', examples: ['we_3f9a0c1d2e4b5a6978c0d1e2'] }),
  url: t.String({ examples: ['https://agent.example.com/hooks/berth'] }),
  types: t.Array(t.String(), { description: 'The event types sent to it; empty: every type.', examples: [['deployment.succeeded', 'deployment.failed']] }),
  state: t.Union([t.Literal('active'), t.Literal('disabled')], { description: 'disabled: nothing is sent (PATCH state active sends again).' }),
  disabled_reason: Nullable(t.Union([t.Literal('gone'), t.Literal('failing'), t.Literal('by_owner')], {
    description: 'gone: the receiver answered 410; failing: its deliveries failed for three days; by_owner: PATCH state disabled. Null while active.',
  })),
  failing_since: Nullable(DateTime('When its deliveries began failing, with no success since; null while they succeed.')),
  previous_secret_expires_at: Nullable(DateTime('After rotate-secret: until when the previous secret still signs deliveries (24 h); null otherwise.')),
  created_at: DateTime(),
  updated_at: DateTime(),
}

const example = {
  id: 'we_3f9a0c1d2e4b5a6978c0d1e2', url: 'https://agent.example.com/hooks/berth', types: ['deployment.succeeded', 'deployment.failed'], state: 'active',
  disabled_reason: null, failing_since: null, previous_secret_expires_at: null, created_at: '2026-11-29T12:00:00.000Z', updated_at: '2026-11-29T12:00:00.000Z',
}

export const WebhookEndpoint = t.Object(endpointFields, { examples: [example] })
export const WebhookEndpointWithSecret = t.Object({
  ...endpointFields,
  secret: t.String({ description: 'The signing secret (`whsec_` and base64): shown here only, on create and rotate-secret. Verify deliveries with it (docs/api.md, "Webhooks").', examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] }),
}, { examples: [{ ...example, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }] })

export const WebhookDelivery = t.Object({
  id: t.String({ description: '`wd_` and 24 hex characters.', examples: ['wd_8e1c0b7a6f5d4c3b2a190817'] }),
  event_id: t.String({ description: "The event's id: the webhook-id header of every attempt.", examples: ['evt_5b0c7e3a9d1f2e4c6a8b0d2f'] }),
  event_type: t.String({ examples: ['deployment.succeeded'] }),
  status: t.Union([t.Literal('pending'), t.Literal('succeeded'), t.Literal('failed')], { description: 'pending: to be sent (or tried again at next_attempt_at); succeeded: a 2xx answer; failed: given up (the schedule ran out, or the endpoint was disabled).' }),
  attempts: t.Integer({ examples: [1] }),
  next_attempt_at: Nullable(DateTime('When it is tried next, while pending.')),
  last_code: Nullable(t.Integer({ description: "The HTTP status of the last attempt's answer; null when none came.", examples: [200] })),
  last_error: Nullable(t.String({ description: 'Why the last attempt failed, in words; null after a success.' })),
  created_at: DateTime(),
  delivered_at: Nullable(DateTime('When a 2xx answer came.')),
}, {
  examples: [{
    id: 'wd_8e1c0b7a6f5d4c3b2a190817', event_id: 'evt_5b0c7e3a9d1f2e4c6a8b0d2f', event_type: 'deployment.succeeded', status: 'succeeded', attempts: 1,
    next_attempt_at: null, last_code: 200, last_error: null, created_at: '2026-11-29T12:00:00.000Z', delivered_at: '2026-11-29T12:00:00.120Z',
  }],
})

export type WebhookEndpointView = Static<typeof WebhookEndpoint>
export type WebhookEndpointWithSecretView = Static<typeof WebhookEndpointWithSecret>
export type WebhookDeliveryView = Static<typeof WebhookDelivery>

export function endpointView(row: WebhookEndpointRow, now: number): WebhookEndpointView {
  return {
    id: row.id, url: row.url, types: JSON.parse(row.types) as string[], state: row.state,
    disabled_reason: row.disabledReason as WebhookEndpointView['disabled_reason'],
    failing_since: iso(row.failingSince),
    previous_secret_expires_at: row.previousExpiresAt !== null && row.previousExpiresAt > now ? iso(row.previousExpiresAt) : null,
    created_at: iso(row.createdAt)!, updated_at: iso(row.updatedAt)!,
  }
}

export function deliveryView(row: WebhookDeliveryRow): WebhookDeliveryView {
  return {
    id: row.id, event_id: row.eventId, event_type: row.eventType, status: row.status, attempts: row.attempts,
    next_attempt_at: row.status === 'pending' ? iso(row.nextAttemptAt) : null,
    last_code: row.lastCode, last_error: row.lastError, created_at: iso(row.createdAt)!, delivered_at: iso(row.deliveredAt),
  }
}
