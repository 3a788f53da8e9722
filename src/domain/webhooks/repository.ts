import { and, asc, desc, eq, inArray, lt, sql } from 'drizzle-orm'
import { accounts, webhookDeliveries, webhookEndpoints, type WebhookDeliveryRow, type WebhookEndpointRow } from '../../store/schema'
import type { Store } from '../../store/store'

export type { WebhookDeliveryRow, WebhookEndpointRow }

/** The webhook endpoints and their deliveries (tables webhook_endpoints, webhook_deliveries); a secret is only ever here sealed. */
export class WebhooksRepository {
  constructor(private readonly store: Store) {}

  endpoints(accountId: string): WebhookEndpointRow[] {
    return this.store.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.accountId, accountId)).orderBy(asc(webhookEndpoints.createdAt), asc(webhookEndpoints.id)).all()
  }

  /** The account's endpoint with this id (undefined for another account's). */
  endpoint(accountId: string, id: string): WebhookEndpointRow | undefined {
    return this.store.db.select().from(webhookEndpoints).where(and(eq(webhookEndpoints.accountId, accountId), eq(webhookEndpoints.id, id))).get()
  }

  endpointById(id: string): WebhookEndpointRow | undefined {
    return this.store.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id)).get()
  }

  /** The account's active endpoints (the fan-out's); none once the account is deleted (anonymized): its events leave the box no more. */
  activeEndpoints(accountId: string): WebhookEndpointRow[] {
    return this.store.db.select().from(webhookEndpoints).where(and(
      eq(webhookEndpoints.accountId, accountId), eq(webhookEndpoints.state, 'active'),
      sql`NOT EXISTS (SELECT 1 FROM ${accounts} WHERE ${accounts.id} = ${webhookEndpoints.accountId} AND ${accounts.status} = 'anonymized')`,
    )).all()
  }

  /** The ids of every active endpoint with a pending delivery (the sender's round). */
  endpointsWithPending(): string[] {
    return this.store.sqlite
      .query<{ id: string }, []>(
        "SELECT e.id AS id FROM webhook_endpoints e WHERE e.state = 'active' AND EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status = 'pending')",
      )
      .all()
      .map((r) => r.id)
  }

  insertEndpoint(row: WebhookEndpointRow): void {
    this.store.db.insert(webhookEndpoints).values(row).run()
  }

  updateEndpoint(id: string, set: Partial<Omit<WebhookEndpointRow, 'id' | 'accountId'>>): void {
    this.store.db.update(webhookEndpoints).set(set).where(eq(webhookEndpoints.id, id)).run()
  }

  removeEndpoint(id: string): void {
    this.store.write(() => {
      this.store.db.delete(webhookDeliveries).where(eq(webhookDeliveries.endpointId, id)).run()
      this.store.db.delete(webhookEndpoints).where(eq(webhookEndpoints.id, id)).run()
    })
  }

  insertDeliveries(rows: WebhookDeliveryRow[]): void {
    if (rows.length > 0) this.store.db.insert(webhookDeliveries).values(rows).run()
  }

  /** The endpoint's oldest pending delivery (by event): the only one the sender may send. */
  head(endpointId: string): WebhookDeliveryRow | undefined {
    return this.store.db.select().from(webhookDeliveries)
      .where(and(eq(webhookDeliveries.endpointId, endpointId), eq(webhookDeliveries.status, 'pending')))
      .orderBy(asc(webhookDeliveries.eventSeq)).limit(1).get()
  }

  delivery(endpointId: string, id: string): WebhookDeliveryRow | undefined {
    return this.store.db.select().from(webhookDeliveries).where(and(eq(webhookDeliveries.endpointId, endpointId), eq(webhookDeliveries.id, id))).get()
  }

  /** The endpoint's deliveries, newest first, before `beforeCreatedAt`'s row when given. */
  deliveries(endpointId: string, limit: number, before?: WebhookDeliveryRow): WebhookDeliveryRow[] {
    const where = before
      ? and(eq(webhookDeliveries.endpointId, endpointId), sql`(${webhookDeliveries.createdAt}, ${webhookDeliveries.eventSeq}) < (${before.createdAt}, ${before.eventSeq})`)
      : eq(webhookDeliveries.endpointId, endpointId)
    return this.store.db.select().from(webhookDeliveries).where(where)
      .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.eventSeq)).limit(limit).all()
  }

  updateDelivery(id: string, set: Partial<Omit<WebhookDeliveryRow, 'id' | 'endpointId'>>): void {
    this.store.db.update(webhookDeliveries).set(set).where(eq(webhookDeliveries.id, id)).run()
  }

  /** Every pending delivery of the endpoint given up (its endpoint disabled); returns how many. */
  failPending(endpointId: string, error: string): number {
    return this.store.db.update(webhookDeliveries).set({ status: 'failed', lastError: error })
      .where(and(eq(webhookDeliveries.endpointId, endpointId), eq(webhookDeliveries.status, 'pending'))).returning({ id: webhookDeliveries.id }).all().length
  }

  /** The finished deliveries made before `before` (the upkeep's retention). */
  pruneFinished(before: number): number {
    return this.store.db.delete(webhookDeliveries)
      .where(and(inArray(webhookDeliveries.status, ['succeeded', 'failed']), lt(webhookDeliveries.createdAt, before))).returning({ id: webhookDeliveries.id }).all().length
  }
}
