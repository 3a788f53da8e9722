import { randomBytes } from 'node:crypto'
import { HostNotFoundError, OutboundRefusedError } from '../../drivers/net/errors'
import type { CheckedHost } from '../../drivers/net/outbound'
import type { SecretBox } from '../../drivers/secrets/types'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { EventRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { CodedError, conflict, invalid, notFound, op, say } from '../errors'
import { EVENT_TYPES, type EventType } from '../events'
import type { WebhookDeliveryRow, WebhookEndpointRow, WebhooksRepository } from './repository'
import { secretOwner } from './sender'
import { newWebhookSecret } from './signing'
import { deliveryView, endpointView, type WebhookDeliveryView, type WebhookEndpointView, type WebhookEndpointWithSecretView } from './views'

/** An account has at most this many endpoints. */
export const MAX_WEBHOOK_ENDPOINTS = 10
/** After rotate-secret, the previous secret signs deliveries this long too. */
export const PREVIOUS_SECRET_MS = 24 * 3_600_000
export const MAX_WEBHOOK_URL_LENGTH = 2048
/** Finished deliveries are kept as long as events are (30 days). */
export const DELIVERY_RETENTION_MS = 30 * 24 * 3_600_000

export interface WebhooksServiceDeps {
  repo: WebhooksRepository
  store: Store
  clock: Clock
  log: Logger
  box: SecretBox
  /** The outbound check (drivers/net/outbound.ts): a URL's host resolved once and judged. */
  outbound: { check(host: string): Promise<CheckedHost> }
  /** Tells the sender a delivery is due (redeliver, an endpoint enabled again). */
  kick: () => void
}

export interface EndpointInput {
  url?: string
  types?: string[]
  state?: 'active' | 'disabled'
}

const newId = (prefix: string) => prefix + randomBytes(12).toString('hex')

/**
 * The account's webhook endpoints (issue 41; docs/api.md "Webhooks"): their URLs checked against
 * the outbound rules at creation and change (and again at every delivery, by the transport), their
 * secrets sealed, shown once; the deliveries' list and redelivery. Another account's endpoint is
 * 404, as one that does not exist.
 */
export class WebhooksService {
  constructor(private readonly d: WebhooksServiceDeps) {}

  /** The fan-out (EventLog.onRecord, in the event's own transaction): a pending delivery per active endpoint of the account whose types match. */
  fanOut(event: EventRow): void {
    const endpoints = this.d.repo.activeEndpoints(event.accountId)
    if (endpoints.length === 0) return
    const now = this.d.clock.now()
    const rows: WebhookDeliveryRow[] = []
    for (const e of endpoints) {
      const types = parseTypes(e.types)
      if (types.length > 0 && !types.includes(event.type)) continue
      rows.push({
        id: newId('wd_'), endpointId: e.id, eventSeq: event.seq, eventId: event.id, eventType: event.type, status: 'pending',
        attempts: 0, nextAttemptAt: now, lastCode: null, lastError: null, createdAt: now, deliveredAt: null,
      })
    }
    this.d.repo.insertDeliveries(rows)
  }

  list(accountId: string): WebhookEndpointView[] {
    const now = this.d.clock.now()
    return this.d.repo.endpoints(accountId).map((r) => endpointView(r, now))
  }

  get(accountId: string, id: string): WebhookEndpointView {
    return endpointView(this.find(accountId, id), this.d.clock.now())
  }

  async create(accountId: string, input: { url: string; types?: string[] }): Promise<WebhookEndpointWithSecretView> {
    const url = await this.checkedUrl(input.url)
    const types = checkTypes(input.types ?? [])
    const now = this.d.clock.now()
    const id = newId('we_')
    const secret = newWebhookSecret()
    const row: WebhookEndpointRow = {
      id, accountId, url, types: JSON.stringify(types), sealed: this.d.box.seal(secret, secretOwner({ accountId, id })),
      previousSealed: null, previousExpiresAt: null, state: 'active', disabledReason: null, failingSince: null, createdAt: now, updatedAt: now,
    }
    this.d.store.write(() => {
      if (this.d.repo.endpoints(accountId).length >= MAX_WEBHOOK_ENDPOINTS) {
        throw conflict(say`An account has at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints; delete one you no longer use (${op('deleteWebhookEndpoint')}) first.`)
      }
      this.d.repo.insertEndpoint(row)
    })
    this.d.log.info('webhooks: endpoint created', { endpoint: id, account: accountId })
    return { ...endpointView(row, now), secret }
  }

  async update(accountId: string, id: string, input: EndpointInput): Promise<WebhookEndpointView> {
    this.find(accountId, id)
    const url = input.url === undefined ? undefined : await this.checkedUrl(input.url)
    const types = input.types === undefined ? undefined : checkTypes(input.types)
    const now = this.d.clock.now()
    let enabled = false
    this.d.store.write(() => {
      const row = this.find(accountId, id)
      const set: Partial<WebhookEndpointRow> = { updatedAt: now }
      if (url !== undefined) set.url = url
      if (types !== undefined) set.types = JSON.stringify(types)
      if (input.state === 'active' && row.state !== 'active') {
        Object.assign(set, { state: 'active', disabledReason: null, failingSince: null })
        enabled = true
      }
      if (input.state === 'disabled' && row.state !== 'disabled') {
        Object.assign(set, { state: 'disabled', disabledReason: 'by_owner' })
        this.d.repo.failPending(id, 'Not sent: the endpoint was disabled by its owner.')
      }
      this.d.repo.updateEndpoint(id, set)
    })
    if (enabled) this.d.kick()
    return this.get(accountId, id)
  }

  delete(accountId: string, id: string): WebhookEndpointView {
    const view = this.get(accountId, id)
    this.d.repo.removeEndpoint(id)
    this.d.log.info('webhooks: endpoint deleted', { endpoint: id, account: accountId })
    return view
  }

  /** A new secret, shown once; the previous one keeps signing for 24 h (a second rotation within them drops the oldest). */
  rotateSecret(accountId: string, id: string): WebhookEndpointWithSecretView {
    const row = this.find(accountId, id)
    const now = this.d.clock.now()
    const secret = newWebhookSecret()
    this.d.repo.updateEndpoint(id, { sealed: this.d.box.seal(secret, secretOwner(row)), previousSealed: row.sealed, previousExpiresAt: now + PREVIOUS_SECRET_MS, updatedAt: now })
    this.d.log.info('webhooks: secret rotated', { endpoint: id, account: accountId })
    return { ...this.get(accountId, id), secret }
  }

  /** The endpoint's deliveries, newest first; those older than delivery `before` when given (422 when it is not one of the endpoint's). */
  deliveries(accountId: string, id: string, limit: number, before?: string): WebhookDeliveryView[] {
    this.find(accountId, id)
    const from = before === undefined ? undefined : this.d.repo.delivery(id, before)
    if (before !== undefined && !from) throw invalid('before', say`No delivery '${before}' of webhook endpoint '${id}'; send the id of the last delivery of the page you have, or leave before out for the newest.`)
    return this.d.repo.deliveries(id, limit, from).map(deliveryView)
  }

  /** Sends a delivery again (its event, its webhook-id), in its place in the endpoint's order. */
  redeliver(accountId: string, id: string, deliveryId: string): WebhookDeliveryView {
    const view = this.d.store.write(() => {
      const endpoint = this.find(accountId, id)
      const row = this.d.repo.delivery(id, deliveryId)
      if (!row) throw notFound(`Webhook endpoint ${id} has no delivery ${deliveryId}; list them with listWebhookDeliveries.`, 'delivery_id')
      if (endpoint.state !== 'active') throw conflict(say`The endpoint is disabled; enable it first (${op('updateWebhookEndpoint', { webhook_id: id })} with "state": "active"), then redeliver.`)
      if (row.status === 'pending') throw conflict('The delivery is pending already: it is sent at next_attempt_at.')
      const now = this.d.clock.now()
      this.d.repo.updateDelivery(deliveryId, { status: 'pending', nextAttemptAt: now, lastError: null, deliveredAt: null })
      return deliveryView({ ...row, status: 'pending', nextAttemptAt: now, lastError: null, deliveredAt: null })
    })
    this.d.kick()
    return view
  }

  /** Removes the finished (succeeded or failed) deliveries older than the events' 30 days (the upkeep); returns how many. */
  prune(now: number): number {
    const removed = this.d.repo.pruneFinished(now - DELIVERY_RETENTION_MS)
    if (removed > 0) this.d.log.info('webhooks: finished deliveries pruned', { removed })
    return removed
  }

  private find(accountId: string, id: string): WebhookEndpointRow {
    const row = this.d.repo.endpoint(accountId, id)
    if (!row) throw notFound(`No webhook endpoint ${id} in this account; list them with listWebhookEndpoints.`, 'webhook_id')
    return row
  }

  /** The URL as kept: https (http only to a network outbound.allow_networks lists), no credentials, its host allowed. */
  private async checkedUrl(text: string): Promise<string> {
    let url: URL
    try {
      url = new URL(text)
    } catch {
      throw invalid('url', 'Give an absolute URL, such as https://agent.example.com/hooks/berth.')
    }
    if (text.length > MAX_WEBHOOK_URL_LENGTH) throw invalid('url', `The URL is longer than ${MAX_WEBHOOK_URL_LENGTH} characters.`)
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalid('url', 'Give an https:// URL.')
    if (url.username || url.password) throw invalid('url', 'A webhook URL carries no user or password: verify deliveries with the signing secret instead.')
    if (url.hash) throw invalid('url', 'A webhook URL has no #fragment (it is never sent); remove it.')
    let checked: CheckedHost
    try {
      checked = await this.d.outbound.check(url.hostname)
    } catch (err) {
      if (err instanceof OutboundRefusedError) throw new CodedError('invalid', 'BLOCKED_ADDRESS', err.message, 'url', {})
      if (err instanceof HostNotFoundError) throw invalid('url', err.message)
      throw err
    }
    if (url.protocol === 'http:' && !checked.listed) throw invalid('url', 'Give an https:// URL: deliveries travel over TLS (plain http:// is taken only to a network the hoster lists in outbound.allow_networks).')
    return url.toString()
  }
}

function parseTypes(text: string): string[] {
  try {
    const parsed: unknown = JSON.parse(text)
    return Array.isArray(parsed) ? parsed.filter((t): t is string => typeof t === 'string') : []
  } catch {
    return []
  }
}

function checkTypes(types: string[]): EventType[] {
  const known = new Set<string>(EVENT_TYPES)
  for (const type of types) {
    if (!known.has(type)) throw invalid('types', `Unknown event type ${JSON.stringify(type)}; the types are ${EVENT_TYPES.join(', ')} (an empty list: every type).`)
  }
  return [...new Set(types)] as EventType[]
}
