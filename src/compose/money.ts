/** Money: the payment processor, every charge, the purchase (checkout) and the subscriptions after it. */
import { BillingService, Charges, makeLocalLedgerStore, PortalLinks, SubscriptionBilling, SubscriptionEvents } from '../domain/billing'
import { type SiteRunner, type SitesService, SubscriptionSites } from '../domain/sites'
import { CheckoutService, HostedSessions } from '../domain/checkout'
import { selectProcessor } from '../drivers/payments/select'
import type { PaymentProcessor } from '../drivers/payments/types'
import type { CoreReads, SharedRepositories } from './core'
import { secretOf } from './installation'

/** What the processor and the charges are: made before the areas that charge (names, sites). */
export interface Payments {
  /** The payment processor the config names: the built-in test-mode one or Stripe. */
  processor: PaymentProcessor
  /** Every charge of a card: pending, charged with its key, settled or refunded (billing/charges.ts). */
  charges: Charges
  billing: SharedRepositories['billing']
  /** Signed links to the built-in billing portal. */
  portalLinks: PortalLinks
  /** Refunds a purchase whose site could not be set up. */
  purchases: BillingService
}

/** The processor the config selects, with the built-in one's hosted pages and ledger, and the charges through it. */
export function buildPayments(core: CoreReads<'config' | 'store' | 'clock' | 'log' | 'plans' | 'events', 'checkout' | 'billing'>): Payments {
  const { config, store, clock, log, plans, repos, events } = core
  const hostedSessions = new HostedSessions({ repo: repos.checkout, plans })
  const portalLinks = new PortalLinks({ siteUrl: config.server.siteUrl, secret: secretOf(store, 'portal_secret'), clock })
  const processor = selectProcessor(config, {
    local: { lookup: (ref) => hostedSessions.find(ref), ledger: makeLocalLedgerStore(store, clock), portal: portalLinks, now: () => clock.now(), delayMs: config.dev.paymentDelayMs },
    stripeEvents: {
      claim: (id) => repos.billing.claimEvent(id, 'stripe', clock.now()),
      settle: (id) => repos.billing.settleEvent(id),
      release: (id) => repos.billing.releaseEvent(id),
    },
    clock,
    log,
  })
  // Every charge: pending first with a key derived from what is paid for, then the processor, then settled.
  const charges = new Charges({ store, clock, log, repo: repos.billing, processor, events })
  return {
    processor,
    charges,
    billing: repos.billing,
    portalLinks,
    purchases: new BillingService(repos.billing, repos.checkout, charges, clock, log),
  }
}

/** The purchase and what follows it, made once sites exist (a purchase creates one). */
export interface Money {
  checkout: CheckoutService
  /** Subscriptions after the purchase: renewals, retries, suspension, cancellation, proration. */
  subscriptions: SubscriptionBilling
}

/**
 * Checkout and subscriptions, and what moves them on: payments a stop left pending, and the
 * processor's events.
 */
export function buildMoney(core: CoreReads<'config' | 'store' | 'clock' | 'log' | 'plans' | 'keys' | 'jobs' | 'room' | 'events', 'sites' | 'billing' | 'accounts' | 'checkout'>, payments: Pick<Payments, 'processor' | 'charges'>, sites: { runner: SiteRunner; sites: SitesService }): Money {
  const { config, store, clock, log, plans, keys, jobs, repos } = core
  const { processor, charges } = payments
  // A subscription paid, lapsed or ended: the sites under it answer (reactivated, suspended, scheduled for deletion).
  const subscriptionEvents = new SubscriptionEvents()
  const subscriptionSites = new SubscriptionSites({ sites: repos.sites, jobs, runner: sites.runner, log })
  subscriptionEvents.subscribe((event) => subscriptionSites.answer(event))
  const subscriptions = new SubscriptionBilling({ store, clock, log, repo: repos.billing, accounts: repos.accounts, sites: repos.sites, plans, events: subscriptionEvents, charges, eventLog: core.events })
  const checkout = new CheckoutService({ store, clock, log, prefix: config.brand.prefix, repo: repos.checkout, plans, money: { processor, charges, billing: repos.billing }, buyers: { accounts: repos.accounts, keys }, sites: sites.sites, jobs, room: core.room })
  // Payments a stop left pending whose subject has no pass of its own (renewals and domains have theirs).
  charges.onPending('purchase', (payment) => checkout.resumePurchase(payment))
  charges.onPending('proration', (payment) => subscriptions.resumeProration(payment))
  // The processor's events (a hosted payment going through) move checkouts on.
  processor.onEvent((event) => checkout.onProcessorEvent(event))
  // A card replaced at the processor (Stripe's portal) goes on file and pays what is unpaid.
  processor.onEvent((event) => subscriptions.onProcessorEvent(event))
  return { checkout, subscriptions }
}
