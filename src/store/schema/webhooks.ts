import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

export const WEBHOOK_ENDPOINT_STATES = ['active', 'disabled'] as const
export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const

/**
 * An account's webhook endpoints (issue 41; domain/webhooks): where its events are sent, signed
 * per the Standard Webhooks specification. The secret is sealed with the box key (drivers/secrets)
 * for (account, `webhook:{id}`); after a rotation the previous one is kept, sealed the same way,
 * until `previous_expires_at` (24 h), and deliveries are signed with both.
 */
export const webhookEndpoints = sqliteTable('webhook_endpoints', {
  /** `we_` and 24 hex characters. */
  id: text('id').primaryKey(),
  accountId: text('account_id').notNull(),
  url: text('url').notNull(),
  /** JSON array of event types; empty: every type. */
  types: text('types').notNull(),
  sealed: text('sealed').notNull(),
  previousSealed: text('previous_sealed'),
  previousExpiresAt: integer('previous_expires_at'),
  state: text('state', { enum: WEBHOOK_ENDPOINT_STATES }).notNull(),
  /** `gone` (the receiver answered 410), `failing` (three days of failed deliveries), `by_owner`. */
  disabledReason: text('disabled_reason'),
  /** When its deliveries began failing without a success since; null while they succeed. */
  failingSince: integer('failing_since'),
  createdAt: integer('created_at').notNull(),
  updatedAt: integer('updated_at').notNull(),
}, (t) => [index('webhook_endpoints_account').on(t.accountId, t.state)])

/**
 * One event to one endpoint: made `pending` in the event's own transaction (the fan-out), sent in
 * order of `event_seq` per endpoint, until it is `succeeded` or `failed` (given up, or its endpoint
 * disabled). Kept 30 days once finished (as the events), or until its endpoint is deleted; listed by the API.
 */
export const webhookDeliveries = sqliteTable('webhook_deliveries', {
  /** `wd_` and 24 hex characters. */
  id: text('id').primaryKey(),
  endpointId: text('endpoint_id').notNull(),
  eventSeq: integer('event_seq').notNull(),
  /** The event's id: the `webhook-id` of every attempt. */
  eventId: text('event_id').notNull(),
  eventType: text('event_type').notNull(),
  status: text('status', { enum: WEBHOOK_DELIVERY_STATUSES }).notNull(),
  attempts: integer('attempts').notNull().default(0),
  nextAttemptAt: integer('next_attempt_at').notNull(),
  /** The HTTP status of the last answer; null when none came (refused, timed out, unreachable). */
  lastCode: integer('last_code'),
  lastError: text('last_error'),
  createdAt: integer('created_at').notNull(),
  deliveredAt: integer('delivered_at'),
}, (t) => [
  index('webhook_deliveries_queue').on(t.endpointId, t.status, t.eventSeq),
  index('webhook_deliveries_list').on(t.endpointId, t.createdAt),
  // The upkeep's pruning of finished deliveries by age (domain/webhooks/service.ts, prune).
  index('webhook_deliveries_created').on(t.createdAt),
])

export type WebhookEndpointRow = typeof webhookEndpoints.$inferSelect
export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect
