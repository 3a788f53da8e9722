/**
 * Time as Berth sees it. Every service takes a Clock instead of calling Date.now(), so tests can
 * cross a 7-day grace period or an hour-long rate-limit window without waiting.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/**
 * The system clock moved by `offsetMs` (config `dev.clock_offset_seconds`), so that an
 * end-to-end test can restart the compiled binary a week later; the system clock itself when 0.
 */
export const shiftedClock = (offsetMs: number): Clock => (offsetMs === 0 ? systemClock : { now: () => Date.now() + offsetMs })

/** A clock that moves only when told to; for tests. */
export class ManualClock implements Clock {
  constructor(private ms = Date.UTC(2026, 0, 1)) {}
  now() {
    return this.ms
  }
  advance(ms: number) {
    this.ms += ms
  }
  set(ms: number) {
    this.ms = ms
  }
}

export const iso = (ms: number) => new Date(ms).toISOString()

/** `ms` plus whole calendar years (29 February becomes 1 March in a common year, as registries count). */
export function addYears(ms: number, years: number): number {
  const d = new Date(ms)
  d.setUTCFullYear(d.getUTCFullYear() + years)
  return d.getTime()
}
