import { describe, expect, it } from 'vitest'
import type { OffsiteCopyRow } from '../../store/schema'
import { boxCopiesToDrop } from './retention'

const HOUR = 3600_000
const DAY = 24 * HOUR
const NOW = Date.UTC(2026, 10, 20, 12)

function row(kind: OffsiteCopyRow['kind'], ageMs: number, refs: string[] | null = null): OffsiteCopyRow {
  const madeAt = NOW - ageMs
  return {
    id: `${kind}-${ageMs}`, kind, key: `${kind}/${madeAt}`, archiveId: null, status: 'copied', sha256: 'x', bytes: 1, refs: refs && JSON.stringify(refs),
    madeAt, copiedAt: madeAt, attempts: 0, nextAttemptAt: madeAt, attemptedAt: madeAt, lastError: null, verifiedAt: null, verifyError: null,
  }
}

describe('boxCopiesToDrop', () => {
  it('keeps the last 24 h, the newest of each day within the days kept, and drops the rest', () => {
    const rows = [0, 6, 23, 25, 30, 49, 50, 100].map((h) => row('manifest', h * HOUR))
    const dropped = boxCopiesToDrop(rows, NOW, 3).sort()
    // Now is the 20th at 12:00. 0, 6, 23 h: the last day; 23 h is also the newest of the 19th,
    // so 25 h and 30 h (the 19th too) go. 49 h and 50 h (the 18th): 49 h stays. 100 h is past 3 days.
    expect(dropped).toEqual(['manifest-90000000', 'manifest-108000000', 'manifest-180000000', 'manifest-360000000'].sort())
  })

  it('keeps the newest of each kind however old, so a box whose copies failed for weeks still has its last good one', () => {
    const rows = [row('manifest', 30 * DAY, ['store/a']), row('store', 30 * DAY), row('manifest', 31 * DAY)]
    rows[1]!.key = 'store/a'
    expect(boxCopiesToDrop(rows, NOW, 7)).toEqual(['manifest-2678400000'])
  })

  it('never drops a store or tls copy that a kept manifest names, however old', () => {
    const oldTls = row('tls', 60 * DAY)
    const rows = [row('manifest', HOUR, ['store/x', oldTls.key]), oldTls, row('tls', 59 * DAY), { ...row('store', 40 * DAY), key: 'store/x' }, row('store', 41 * DAY), row('store', HOUR)]
    // The 60-day tls copy is named; the 59-day one is the newest tls copy; the 40-day store copy is named.
    expect(boxCopiesToDrop(rows, NOW, 7)).toEqual(['store-3542400000'])
  })
})
