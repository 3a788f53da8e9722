/**
 * Throughput comparisons: each berth route against a bare Bun.serve answering a body of the same
 * shape. Runs alternate (reference, berth, reference, berth, ...) over several rounds and each
 * figure is the median over the rounds, so drift on the shared machine touches both sides.
 */
import { median } from './stats'
import { measure, warmUp, type WrkResult, type WrkTarget } from './wrk'

export interface Comparison {
  name: string
  reference: WrkTarget
  berth: WrkTarget
  /** Berth req/s ÷ reference req/s must reach this. */
  minRatio: number
  /** Berth's p99 must stay under this, when set. */
  maxP99Ms?: number
}

export interface SideSummary {
  requestsPerSec: number
  p50Ms: number
  p99Ms: number
}

export interface ComparisonResult {
  name: string
  berthRoute: string
  rounds: { reference: WrkResult; berth: WrkResult }[]
  reference: SideSummary
  berth: SideSummary
  ratio: number
  minRatio: number
  maxP99Ms?: number
  /** Non-2xx responses on either side: the figures are not comparable, so the check fails. */
  errors: string[]
  /** Socket errors (mostly wrk's 2 s timeouts when the machine is overloaded): shown, not failed. */
  warnings: string[]
  pass: boolean
}

export async function runComparisons(comparisons: Comparison[], rounds: number, log: (line: string) => void): Promise<ComparisonResult[]> {
  const samples = comparisons.map(() => [] as { reference: WrkResult; berth: WrkResult }[])
  for (let round = 1; round <= rounds; round++) {
    // The comparisons take turns going first (listed order in odd rounds, reversed in even ones),
    // so that none gains from always following the same neighbour (a baseline build included).
    const order = [...comparisons.entries()]
    if (round % 2 === 0) order.reverse()
    for (const [i, c] of order) {
      const reference = await warmThenMeasure(c.reference)
      log(`  round ${round}/${rounds} ${c.reference.name.padEnd(22)} ${describe(reference)}`)
      const berth = await warmThenMeasure(c.berth)
      const ratio = berth.requestsPerSec / reference.requestsPerSec
      log(`  round ${round}/${rounds} ${c.berth.name.padEnd(22)} ${describe(berth)}  ratio ${ratio.toFixed(2)}`)
      samples[i]!.push({ reference, berth })
    }
  }
  return comparisons.map((c, i) => summarize(c, samples[i]!))
}

async function warmThenMeasure(target: WrkTarget): Promise<WrkResult> {
  await warmUp(target)
  return measure(target)
}

function summarize(c: Comparison, rounds: { reference: WrkResult; berth: WrkResult }[]): ComparisonResult {
  const reference = sideSummary(rounds.map((r) => r.reference))
  const berth = sideSummary(rounds.map((r) => r.berth))
  const ratio = berth.requestsPerSec / reference.requestsPerSec
  const labelled = rounds.flatMap((r, i) => [
    { label: `round ${i + 1} ${c.reference.name}`, result: r.reference },
    { label: `round ${i + 1} ${c.berth.name}`, result: r.berth },
  ])
  const errors = labelled.filter((l) => l.result.non2xx > 0).map((l) => `${l.label}: ${l.result.non2xx} non-2xx responses`)
  const warnings = labelled.filter((l) => l.result.socketErrors > 0).map((l) => `${l.label}: ${l.result.socketErrors} socket errors`)
  const p99Ok = c.maxP99Ms === undefined || berth.p99Ms < c.maxP99Ms
  return {
    name: c.name,
    berthRoute: new URL(c.berth.url).pathname,
    rounds,
    reference,
    berth,
    ratio,
    minRatio: c.minRatio,
    maxP99Ms: c.maxP99Ms,
    errors,
    warnings,
    pass: ratio >= c.minRatio && p99Ok && errors.length === 0,
  }
}

function sideSummary(results: WrkResult[]): SideSummary {
  return {
    requestsPerSec: median(results.map((r) => r.requestsPerSec)),
    p50Ms: median(results.map((r) => r.p50Ms)),
    p99Ms: median(results.map((r) => r.p99Ms)),
  }
}

const describe = (r: WrkResult) =>
  `${Math.round(r.requestsPerSec).toString().padStart(7)} req/s  p50 ${r.p50Ms.toFixed(2).padStart(6)} ms  p99 ${r.p99Ms.toFixed(2).padStart(7)} ms  others ${percent(r.contention.otherPercent)}  steal ${percent(r.contention.stealPercent)}`

const percent = (v: number) => (Number.isNaN(v) ? '  ?' : `${v.toFixed(0).padStart(2)}%`)
