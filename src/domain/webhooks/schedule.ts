/**
 * When a failed delivery is tried again (docs/api.md, "Webhooks"): after the first attempt fails,
 * the next waits the first step, and so on; once the last step's attempt fails the delivery is
 * given up (`failed`). The steps add up to 3 days, 13 hours and 35 minutes, so a receiver down for
 * up to three days gets everything once it is back; an endpoint whose deliveries have failed for
 * three days without a success is disabled before that (WEBHOOK_DISABLE_AFTER_MS).
 */
const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE

export const RETRY_STEPS_MS: readonly number[] = [
  5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR, 14 * HOUR, 20 * HOUR, 24 * HOUR,
]

/** An endpoint failing this long without a success is disabled, with a `webhook_endpoint.disabled` event. */
export const WEBHOOK_DISABLE_AFTER_MS = 3 * 24 * HOUR

/** A Retry-After longer than this is taken as this (a receiver cannot park a delivery for weeks). */
export const MAX_RETRY_AFTER_MS = 24 * HOUR

/** The wait before the attempt after `attempts` failed ones; null when the delivery is given up. */
export function retryDelay(attempts: number): number | null {
  return attempts >= 1 && attempts <= RETRY_STEPS_MS.length ? RETRY_STEPS_MS[attempts - 1]! : null
}

/**
 * A Retry-After header's wait in ms (delay-seconds or an HTTP-date), or null when absent or
 * unreadable; at most MAX_RETRY_AFTER_MS.
 */
export function retryAfterMs(header: string | null, now: number): number | null {
  if (!header) return null
  const text = header.trim()
  let ms: number
  if (/^\d+$/.test(text)) ms = Number(text) * 1000
  else {
    const at = Date.parse(text)
    if (Number.isNaN(at)) return null
    ms = Math.max(0, at - now)
  }
  return Math.min(ms, MAX_RETRY_AFTER_MS)
}
