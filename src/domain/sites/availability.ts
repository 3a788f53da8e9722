import { iso } from '../../lib/clock'
import type { RepairBackoff } from './repair-backoff'
import type { SiteRunner } from './runner'

/**
 * Whether each active site serves as berth serve's edge sees it, for the sites' views (issue 36:
 * a site that does not serve is never `active` without a word): an active site whose edge answers
 * its 503 "being brought back" page shows `recovering`, with why in its `error`. The reasons, each
 * one the edge acts on:
 *
 * - its node is down (domain/cluster/health.ts);
 * - it is being switched to another node (a move or an evacuation, marked by a `move_site` job:
 *   domain/cluster/marked-moves-repository.ts);
 * - its container is known not to run (the runner's down sites: it died and is being brought back,
 *   a restore restarts it);
 * - and, for the error only, the reconcile pass could not start it on its node several times in a
 *   row (repair-backoff.ts).
 */
export class SiteAvailability {
  private seen = -1
  private set: ReadonlySet<string> = new Set()

  constructor(private d: {
    nodeDown?: { recovering(): ReadonlySet<string>; version(): number }
    moving?: { slugs(): ReadonlySet<string>; generation(): number }
    runner: Pick<SiteRunner, 'downSlugs' | 'version'>
    repairs?: Pick<RepairBackoff, 'failing' | 'version'>
  }) {}

  /** The slugs of the sites that, if active, show `recovering`. */
  recovering(): ReadonlySet<string> {
    const version = this.version()
    if (version !== this.seen) {
      this.set = new Set([...this.d.nodeDown?.recovering() ?? [], ...this.d.moving?.slugs() ?? [], ...this.d.runner.downSlugs()])
      this.seen = version
    }
    return this.set
  }

  /** Moves whenever `recovering()` or a `reason` may have changed (views are cached on it). */
  version(): number {
    return (this.d.nodeDown?.version() ?? 0) + (this.d.moving?.generation() ?? 0) + this.d.runner.version() + (this.d.repairs?.version() ?? 0)
  }

  /** True when the site's node is down or it is being moved (beyond what a change to the site itself explains). */
  nodeOrMove(slug: string): boolean {
    return this.d.moving?.slugs().has(slug) === true || this.d.nodeDown?.recovering().has(slug) === true
  }

  /** Why a recovering site does not serve, as its owner reads it in the view's `error`. */
  reason(slug: string): string | null {
    if (this.d.moving?.slugs().has(slug)) return 'The hoster is moving it to another server: its visitors get a page saying it is being brought back (503, reloading every 2 s) until it answers there, usually within seconds. Nothing to do; changes to it fail until then.'
    if (this.d.nodeDown?.recovering().has(slug)) return 'The server it runs on does not answer: its visitors get a page saying it is being brought back (503, reloading every 2 s). It serves again, with its files, once that server is back, or once the hoster brings it back on another.'
    const failing = this.d.repairs?.failing().get(slug)
    if (failing) return `Berth could not start it on its server ${failing.count} times since ${iso(failing.since)} (the hoster's log says why); it tries again at ${iso(failing.nextAt)}. Its visitors get a page saying it is being brought back (503).`
    return 'Its server process stopped and is being started again: its visitors get a page saying it is being brought back (503, reloading every 2 s), usually for seconds.'
  }
}
