/** The billing area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { Charges } from './charges'
export type { Approved } from './charges'
export { SubscriptionEvents } from './events'
export type { SubscriptionEvent, SubscriptionReaction } from './events'
export { PortalLinks } from './portal-links'
export { BillingService } from './service'
export { SubscriptionBilling } from './subscriptions'
export { PaymentView, SubscriptionView } from './views'
