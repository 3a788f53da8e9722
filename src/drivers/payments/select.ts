import type { Config } from '../../config/config'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import { LocalProcessor } from './local'
import { StripeProcessor, type WebhookEventLedger } from './stripe'

/** The built-in processor's options, as src/compose/money.ts builds them; `siteUrl` comes from the config. */
export type LocalProcessorDeps = Omit<ConstructorParameters<typeof LocalProcessor>[0], 'siteUrl'>

export interface ProcessorDeps {
  /** Everything the built-in processor takes besides site_url (its session look-up, ledger, portal links...). */
  local: LocalProcessorDeps
  /** Stripe webhook event ids already acted on, kept in the store (unused by the built-in processor). */
  stripeEvents: WebhookEventLedger
  clock: Clock
  log: Logger
}

/**
 * The payment processor the config names (`payments.processor`): the built-in test-mode one, or
 * Stripe with the keys loadConfig has already checked.
 *
 * @example
 * const processor = selectProcessor(config, { local: { lookup, ledger, portal, now: () => clock.now() }, stripeEvents, clock, log })
 */
export function selectProcessor(config: Config, deps: ProcessorDeps): LocalProcessor | StripeProcessor {
  if (config.payments.processor === 'stripe') {
    const { secretKey, webhookSecret, apiBase } = config.payments.stripe
    return new StripeProcessor({
      secretKey, webhookSecret, apiBase: apiBase ?? undefined, siteUrl: config.server.siteUrl, events: deps.stripeEvents, log: deps.log, clock: deps.clock,
    })
  }
  return new LocalProcessor({ siteUrl: config.server.siteUrl, ...deps.local })
}
