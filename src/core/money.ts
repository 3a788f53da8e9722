import type { BillingPeriod } from './enums'

/**
 * Money, one way everywhere: amounts are kept as integer CAD cents; the API shows them as a
 * number of dollars with two decimals (`12.5` is 12.50 CAD), pages as `12.50 CAD`. Dollars
 * become cents by rounding half away from zero once, at the edge of the system (config, plans);
 * every sum, difference and proration is done in cents, rounded to the nearest cent (half up).
 */
export const CURRENCY = 'CAD'

/** Dollars (as config and plans state them) to cents. */
export const toCents = (cad: number): number => Math.sign(cad) * Math.round(Math.abs(cad) * 100)

/** Cents to the API's number of dollars. */
export const toDollars = (cents: number): number => cents / 100

/** Cents as people read them: `12.50 CAD` (negative: `-3.00 CAD`). */
export const formatCad = (cents: number): string => `${(cents / 100).toFixed(2)} ${CURRENCY}`

const DAY_MS = 86_400_000
/** A billing period: 30 days monthly, 365 days annual (design.md, Money after the purchase). */
export const PERIOD_MS: Record<BillingPeriod, number> = { monthly: 30 * DAY_MS, annual: 365 * DAY_MS }

/** What one period of a plan costs, in cents. */
export const periodCents = (price: { monthly: number; annual: number }, period: BillingPeriod): number => toCents(period === 'annual' ? price.annual : price.monthly)

/**
 * The part of `cents` for `remainingMs` of a period of `periodMs`, rounded to the nearest cent
 * (half up); 0 when nothing of the period remains, the whole amount when all of it does.
 */
export function prorate(cents: number, remainingMs: number, periodMs: number): number {
  if (remainingMs <= 0 || periodMs <= 0) return 0
  const share = Math.min(1, remainingMs / periodMs)
  return Math.sign(cents) * Math.round(Math.abs(cents) * share)
}
