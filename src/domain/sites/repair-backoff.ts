/** Failed starts in a row on one node after which the site's view says so (it is still tried, less often). */
export const SAY_AFTER_FAILURES = 3
/** The wait after the first failure; it doubles with each failure in a row, up to MAX_WAIT_MS. */
const FIRST_WAIT_MS = 30_000
const MAX_WAIT_MS = 30 * 60_000

/** A site whose start keeps failing on the node it is placed on. */
export interface RepairFailure {
  node: string
  /** Failures in a row on that node. */
  count: number
  /** When the first of them happened (epoch ms). */
  since: number
  /** Not tried again before this (epoch ms). */
  nextAt: number
}

/**
 * The reconcile pass's memory of the sites it could not start (issue 36): per site and the node it
 * is placed on, the failures in a row. A site that failed is not tried again by the pass before
 * 30 s, then 1, 2, 4 ... 30 min (a node whose engine keeps rejecting it is not asked every pass
 * forever, each ask holding the pass for seconds); after SAY_AFTER_FAILURES its view says why
 * (`reason`). A start that succeeds, or the site placed on another node, starts afresh.
 */
export class RepairBackoff {
  private failures = new Map<string, RepairFailure>()
  private generation = 0

  /** True when the pass may try the site now. */
  due(slug: string, now: number): boolean {
    const f = this.failures.get(slug)
    return !f || now >= f.nextAt
  }

  failed(slug: string, node: string, now: number): RepairFailure {
    const before = this.failures.get(slug)
    const count = before && before.node === node ? before.count + 1 : 1
    const wait = Math.min(MAX_WAIT_MS, FIRST_WAIT_MS * 2 ** (count - 1))
    const failure = { node, count, since: before && before.node === node ? before.since : now, nextAt: now + wait }
    this.failures.set(slug, failure)
    if (count === SAY_AFTER_FAILURES) this.generation++
    return failure
  }

  succeeded(slug: string): void {
    const before = this.failures.get(slug)
    if (!before) return
    this.failures.delete(slug)
    if (before.count >= SAY_AFTER_FAILURES) this.generation++
  }

  /** The sites whose view says their start keeps failing (SAY_AFTER_FAILURES or more in a row). */
  failing(): Map<string, RepairFailure> {
    return new Map([...this.failures].filter(([, f]) => f.count >= SAY_AFTER_FAILURES))
  }

  /** Moves whenever `failing()` changed. */
  version(): number {
    return this.generation
  }
}
