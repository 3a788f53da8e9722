/** The rate-limits area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { RateLimiter } from './service'
export type { RateDecision } from './service'
