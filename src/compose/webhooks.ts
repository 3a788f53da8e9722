/** Webhooks (issue 41): the endpoints' service, the fan-out on the event log, and the sender berth serve runs. */
import type { Config } from '../config/config'
import type { EventLog } from '../domain/events'
import { viewOf } from '../domain/events'
import { WebhookSender, WebhooksRepository, WebhooksService } from '../domain/webhooks'
import { OutboundCheck, outboundPolicyOf, type Resolver } from '../drivers/net/outbound'
import type { SecretBox } from '../drivers/secrets/types'
import { HttpWebhookTransport } from '../drivers/webhooks/http'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { Store } from '../store/store'

export interface WebhooksNeeds {
  config: Config
  store: Store
  clock: Clock
  log: Logger
  box: SecretBox
  events: EventLog
  /** Tests' own resolver (a name that answers loopback, or changes its answer); the system's otherwise. */
  resolver?: Resolver
  /** Tests' own timeout of an attempt; WEBHOOK_TIMEOUT_MS (15 s) otherwise. */
  timeoutMs?: number
}

export interface Webhooks {
  service: WebhooksService
  /** Started by berth serve (src/server.ts), stopped at its shutdown. */
  sender: WebhookSender
}

export function buildWebhooks(n: WebhooksNeeds): Webhooks {
  const repo = new WebhooksRepository(n.store)
  // The same check at creation (the service) and at every delivery (the transport): one resolve, the address connected to.
  const outbound = new OutboundCheck(outboundPolicyOf(n.config), n.resolver)
  const sender = new WebhookSender({
    repo, store: n.store, clock: n.clock, log: n.log, box: n.box, events: n.events, bodyOf: viewOf,
    transport: new HttpWebhookTransport(outbound, n.timeoutMs),
  })
  const service = new WebhooksService({ repo, store: n.store, clock: n.clock, log: n.log, box: n.box, outbound, kick: () => sender.kick() })
  // In the event's own transaction: a delivery per matching endpoint, so none is lost to a crash.
  n.events.onRecord((event) => service.fanOut(event))
  // Once it is committed, the sender looks (one round per burst).
  n.events.onCommitted(() => sender.kick())
  return { service, sender }
}

