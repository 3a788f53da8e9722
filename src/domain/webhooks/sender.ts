import type { WebhookAnswer, WebhookTransport } from '../../drivers/webhooks/types'
import type { SecretBox } from '../../drivers/secrets/types'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { EventRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { EventLog } from '../events'
import type { WebhookDeliveryRow, WebhookEndpointRow, WebhooksRepository } from './repository'
import { retryAfterMs, retryDelay, WEBHOOK_DISABLE_AFTER_MS } from './schedule'
import { webhookHeaders } from './signing'
import { endpointView } from './views'

export interface WebhookSenderDeps {
  repo: WebhooksRepository
  store: Store
  clock: Clock
  log: Logger
  box: SecretBox
  transport: WebhookTransport
  events: Pick<EventLog, 'find' | 'record'>
  /** The body of a delivery: the event as GET /events/ shows it. */
  bodyOf: (event: EventRow) => unknown
  /** At most this many deliveries in flight at once, across endpoints (one per endpoint). */
  maxInFlight?: number
}

/** The longest the sender sleeps without looking again (a clock moved, a row changed by hand). */
const MAX_SLEEP_MS = 30_000
/** After the store refused to write an answer, the delivery is looked at again this much later. */
const RETRY_WRITE_MS = 5_000

/** The box key's owner of an endpoint's secrets (current and previous). */
export const secretOwner = (row: Pick<WebhookEndpointRow, 'accountId' | 'id'>) => ({ siteId: row.accountId, name: `webhook:${row.id}` })

/**
 * Sends the deliveries (issue 41; docs/api.md "Webhooks"): per endpoint, the oldest pending one
 * only, so an endpoint gets its events in order, and the next waits until the earlier one
 * succeeded or was given up. Every attempt carries the event's id as webhook-id and is signed
 * anew (a fresh webhook-timestamp). A delivery is pending in the store until its answer is
 * written: a Berth killed mid-attempt sends it again after its restart (at least once).
 * Woken by the event log's commits (`kick`), by its own timer for retries, and by each answer.
 */
export class WebhookSender {
  private readonly inFlight = new Set<string>()
  private readonly maxInFlight: number
  private stopped = true
  private roundQueued = false
  private starved = false
  private timer: ReturnType<typeof setTimeout> | null = null
  private timerAt = Infinity
  private readonly running = new Set<Promise<void>>()
  /** Answers waiting to be written together (writeAnswers). */
  private readonly answers: { endpointId: string; head: WebhookDeliveryRow; answer: WebhookAnswer; done: (written: boolean) => void }[] = []

  constructor(private readonly d: WebhookSenderDeps) {
    this.maxInFlight = d.maxInFlight ?? 256
  }

  start(): void {
    this.stopped = false
    this.kick()
  }

  /** Stops sending; attempts in flight end on their own (their rows stay pending unless answered). */
  stop(): void {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    this.timerAt = Infinity
  }

  /** Looks for due deliveries soon (once per burst of calls). */
  kick(): void {
    if (this.stopped || this.roundQueued) return
    this.roundQueued = true
    setTimeout(() => {
      this.roundQueued = false
      this.round()
    }, 0)
  }

  /** Resolves once no attempt is in flight (tests and the benchmark). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running])
  }

  private round(): void {
    if (this.stopped) return
    this.starved = false
    for (const id of this.d.repo.endpointsWithPending()) {
      if (this.inFlight.has(id)) continue
      if (this.inFlight.size >= this.maxInFlight) {
        this.starved = true
        break
      }
      this.pump(id)
    }
  }

  /** Sends the endpoint's head delivery when it is due; arms the timer for it otherwise. */
  private pump(endpointId: string): void {
    if (this.stopped || this.inFlight.has(endpointId)) return
    const head = this.d.repo.head(endpointId)
    if (!head) return
    const now = this.d.clock.now()
    if (head.nextAttemptAt > now) {
      this.arm(head.nextAttemptAt - now)
      return
    }
    this.inFlight.add(endpointId)
    const attempt = this.attempt(endpointId, head)
      .catch((err): null => {
        this.d.log.error('webhooks: an attempt failed unexpectedly', { endpoint: endpointId, error: (err as Error).message })
        return null
      })
      .then((answer) => (answer ? this.written(endpointId, head, answer) : true))
      .then((written) => {
        this.inFlight.delete(endpointId)
        this.running.delete(attempt)
        // The store refused the answer's write (a full disk): the delivery is still pending; look again later, not at once.
        if (!written) this.arm(RETRY_WRITE_MS)
        else if (this.starved) this.kick()
        else this.pump(endpointId)
      })
    this.running.add(attempt)
  }

  /**
   * Queues an answer to be written with the others that came in meanwhile, in one store
   * transaction (one fsync for many deliveries: the API's requests wait on none of them); true
   * once written.
   */
  private written(endpointId: string, head: WebhookDeliveryRow, answer: WebhookAnswer): Promise<boolean> {
    return new Promise((done) => {
      this.answers.push({ endpointId, head, answer, done })
      if (this.answers.length === 1) setTimeout(() => this.writeAnswers(), 1)
    })
  }

  private writeAnswers(): void {
    const batch = this.answers.splice(0)
    let ok = true
    try {
      this.d.store.write(() => {
        for (const a of batch) this.settle(a.endpointId, a.head, a.answer)
      })
    } catch (err) {
      ok = false
      this.d.log.error('webhooks: the answers could not be written; their deliveries stay pending', { deliveries: batch.length, error: (err as Error).message })
    }
    for (const a of batch) a.done(ok)
  }

  private arm(inMs: number): void {
    const wait = Math.max(0, Math.min(inMs, MAX_SLEEP_MS))
    const at = Date.now() + wait
    if (this.timer && this.timerAt <= at) return
    if (this.timer) clearTimeout(this.timer)
    this.timerAt = at
    this.timer = setTimeout(() => {
      this.timer = null
      this.timerAt = Infinity
      this.kick()
    }, wait)
  }

  /** One attempt of the head delivery: the answer to write, or null when there is nothing to send (the endpoint gone or disabled, the event no longer kept). */
  private async attempt(endpointId: string, head: WebhookDeliveryRow): Promise<WebhookAnswer | null> {
    const endpoint = this.d.repo.endpointById(endpointId)
    if (!endpoint || endpoint.state !== 'active') return null
    const event = this.d.events.find(endpoint.accountId, head.eventId)
    if (!event) {
      this.d.repo.updateDelivery(head.id, { status: 'failed', lastError: 'The event is no longer kept (events are kept 30 days); it cannot be sent.' })
      return null
    }
    let answer: WebhookAnswer
    try {
      const now = this.d.clock.now()
      const secrets = [this.d.box.open(endpoint.sealed, secretOwner(endpoint))]
      if (endpoint.previousSealed && endpoint.previousExpiresAt !== null && endpoint.previousExpiresAt > now) {
        secrets.push(this.d.box.open(endpoint.previousSealed, secretOwner(endpoint)))
      }
      const body = JSON.stringify(this.d.bodyOf(event))
      const headers = { ...webhookHeaders(secrets, head.eventId, Math.floor(now / 1000), body), 'user-agent': 'Berth-Webhooks/1' }
      answer = await this.d.transport.post({ url: endpoint.url, headers, body })
    } catch (err) {
      answer = { kind: 'unreachable', message: `Berth could not send it: ${(err as Error).message}`, timedOut: false }
    }
    return answer
  }

  /** Writes what came of one attempt (inside writeAnswers' transaction): the delivery's state, the endpoint's failing time, a disable. */
  private settle(endpointId: string, head: WebhookDeliveryRow, answer: WebhookAnswer): void {
    const { repo, clock } = this.d
    const now = clock.now()
    const endpoint = repo.endpointById(endpointId)
    const current = repo.delivery(endpointId, head.id)
    if (!endpoint || !current || current.status !== 'pending') return
    const attempts = current.attempts + 1
    const code = answer.kind === 'answered' ? answer.status : null
    if (code !== null && code >= 200 && code < 300) {
      repo.updateDelivery(head.id, { status: 'succeeded', attempts, lastCode: code, lastError: null, deliveredAt: now })
      if (endpoint.failingSince !== null) repo.updateEndpoint(endpointId, { failingSince: null })
      return
    }
    const error = describe(answer)
    if (code === 410) {
      repo.updateDelivery(head.id, { status: 'failed', attempts, lastCode: code, lastError: error })
      this.disable(endpoint, 'gone', now)
      return
    }
    const failingSince = endpoint.failingSince ?? now
    if (now - failingSince >= WEBHOOK_DISABLE_AFTER_MS) {
      repo.updateDelivery(head.id, { status: 'failed', attempts, lastCode: code, lastError: error })
      this.disable({ ...endpoint, failingSince }, 'failing', now)
      return
    }
    const asked = answer.kind === 'answered' && (code === 429 || code === 503) ? retryAfterMs(answer.retryAfter, now) : null
    const wait = asked ?? retryDelay(attempts)
    if (wait === null) repo.updateDelivery(head.id, { status: 'failed', attempts, lastCode: code, lastError: `${error} Given up after ${attempts} attempts.` })
    else repo.updateDelivery(head.id, { attempts, lastCode: code, lastError: error, nextAttemptAt: now + wait })
    if (endpoint.failingSince === null) repo.updateEndpoint(endpointId, { failingSince })
  }

  private disable(endpoint: WebhookEndpointRow, reason: 'gone' | 'failing', now: number): void {
    this.d.repo.updateEndpoint(endpoint.id, { state: 'disabled', disabledReason: reason, failingSince: endpoint.failingSince, updatedAt: now })
    const why = reason === 'gone' ? 'the receiver answered 410 Gone' : 'its deliveries failed for three days'
    this.d.repo.failPending(endpoint.id, `Not sent: the endpoint was disabled (${why}).`)
    const row = { ...endpoint, state: 'disabled' as const, disabledReason: reason, updatedAt: now }
    this.d.events.record({ type: 'webhook_endpoint.disabled', accountId: endpoint.accountId, data: { ...endpointView(row, now) } })
    this.d.log.warn('webhooks: an endpoint was disabled', { endpoint: endpoint.id, account: endpoint.accountId, reason })
  }
}

/** An attempt's failure in words (the delivery's last_error). */
function describe(answer: WebhookAnswer): string {
  switch (answer.kind) {
    case 'refused': return `Not sent: ${answer.message}`
    case 'unreachable': return answer.message
    case 'answered':
      if (answer.status >= 300 && answer.status < 400) return `The receiver answered ${answer.status} (a redirect); redirects are not followed: give the final URL.`
      return `The receiver answered ${answer.status}; only a 2xx answer counts as received.`
  }
}
