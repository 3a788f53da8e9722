/** The checkout area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { HostedSessions } from './hosted-sessions'
export { CheckoutService } from './service'
export { CheckoutSession } from './views'
