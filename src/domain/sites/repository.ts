import { and, asc, eq, inArray, isNotNull, isNull, lte, ne, or, sql } from 'drizzle-orm'
import { sites, type SiteRow } from '../../store/schema'
import { inJsonList, onFirstUse } from '../../store/prepared'
import type { Store } from '../../store/store'
import type { AppRuntime, SiteStatus, Suspender } from '../../core/enums'
import type { SiteRecords } from './records'

/** The columns of a site that its view shows (`SitesService.views`); a whole SiteRow is one too. */
export type SiteViewRow = Pick<SiteRow, 'id' | 'slug' | 'planSlug' | 'status' | 'modules' | 'subscriptionId' | 'createdAt' | 'error' | 'deletionScheduledFor' | 'suspendedBy' | 'suspendedReason' | 'hstsMaxAge'>

/** Which plans give their sites SSH, and the host ports to hand out (config `ssh.port_range`). */
export interface SshPortPolicy {
  planHasSsh(planSlug: string): boolean
  range: { first: number; last: number }
  /** False when something on the host already listens on the port (checked when handing it out). */
  isFree(port: number): boolean
}

/** Site records: the desired state that the reconciler makes Docker match. */
export class SitesRepository implements SiteRecords {
  private statusWatchers: ((before: SiteRow, after: SiteRow) => void)[] = []

  constructor(private store: Store, private ssh: SshPortPolicy | null = null) {}

  /**
   * Calls `watcher` inside the transaction of every change of a site's status (setStatus,
   * suspend, scheduleDeletion, cancelDeletion, markDeleted), with the row before and after:
   * the event log records there (site-events.ts), so the event commits or rolls back with it.
   */
  onStatusChange(watcher: (before: SiteRow, after: SiteRow) => void): void {
    this.statusWatchers.push(watcher)
  }

  /** Runs `change` on site `id` in a transaction and tells the watchers when its status moved. */
  private changing<T>(id: string, change: () => T): T {
    return this.store.write(() => {
      const before = this.statusWatchers.length > 0 ? this.find(id) : undefined
      const result = change()
      if (before) {
        const after = this.find(id)
        if (after && after.status !== before.status) for (const watcher of this.statusWatchers) watcher(before, after)
      }
      return result
    })
  }

  // The reads behind list views, prepared once (src/store/prepared.ts). The account's sites for
  // its list are read as plain SQL naming only what a view shows: drizzle's mapping of whole rows
  // was a quarter of a fresh GET /sites/ (bench:lists, issue 22).
  private ownedForViews = onFirstUse(() => this.store.sqlite.prepare<SiteViewRow, [string]>(`
    SELECT id, slug, plan_slug AS planSlug, status, modules, subscription_id AS subscriptionId, created_at AS createdAt, error,
           deletion_scheduled_for AS deletionScheduledFor, suspended_by AS suspendedBy, suspended_reason AS suspendedReason, hsts_max_age AS hstsMaxAge
    FROM sites WHERE account_id = ? AND status <> 'deleted' ORDER BY created_at, rowid`))
  private owned = onFirstUse(() => this.store.db.select().from(sites)
    .where(and(eq(sites.accountId, sql.placeholder('accountId')), ne(sites.status, 'deleted'))).orderBy(asc(sites.createdAt), asc(sql`rowid`)).prepare())
  private slugsById = onFirstUse(() => this.store.db.select({ id: sites.id, slug: sites.slug }).from(sites).where(inJsonList(sites.id, 'ids')).prepare())
  private slugsBySubscriptions = onFirstUse(() => this.store.db.select({ subscriptionId: sites.subscriptionId, slug: sites.slug }).from(sites)
    .where(and(inJsonList(sites.subscriptionId, 'ids'), ne(sites.status, 'deleted'))).orderBy(asc(sites.createdAt), asc(sql`rowid`)).prepare())

  insert(row: { id: string; accountId: string; subscriptionId: string | null; slug: string; planSlug: string; createdAt: number }): SiteRow {
    return this.store.write(() => {
      const site = this.store.db.insert(sites).values({ ...row, status: 'provisioning', updatedAt: row.createdAt }).returning().get()
      this.assignSshPorts()
      return this.find(site.id)!
    })
  }

  /**
   * Gives every live site whose plan has SSH and that has no port yet the lowest free port of the
   * range, in one transaction (the unique index is the last word). A site keeps its port for
   * life, across restarts, recreations and plan changes. Throws when the range is used up.
   */
  assignSshPorts(skip: ReadonlySet<number> = new Set()): void {
    const policy = this.ssh
    if (!policy) return
    const liveSites = () => this.store.db.select({ id: sites.id, planSlug: sites.planSlug, sshPort: sites.sshPort }).from(sites).where(ne(sites.status, 'deleted')).all()
    // The reconcile pass calls this every time: no write (which would move the store's version
    // and empty the caches keyed on it) unless a site needs a port.
    if (!liveSites().some((s) => s.sshPort === null && policy.planHasSsh(s.planSlug))) return
    this.store.write(() => {
      const live = liveSites()
      const used = new Set(live.map((s) => s.sshPort).filter((p) => p !== null))
      let next = policy.range.first
      for (const site of live) {
        if (site.sshPort !== null || !policy.planHasSsh(site.planSlug)) continue
        while (next <= policy.range.last && (used.has(next) || skip.has(next) || !policy.isFree(next))) next++
        if (next > policy.range.last) throw new Error(`No SSH port left in ${policy.range.first}-${policy.range.last} (ssh.port_range); widen the range.`)
        this.store.db.update(sites).set({ sshPort: next }).where(eq(sites.id, site.id)).run()
        used.add(next)
      }
    })
  }

  find(id: string): SiteRow | undefined {
    return this.store.db.select().from(sites).where(eq(sites.id, id)).get()
  }

  /** The live (not deleted) site holding `slug`, whoever owns it. */
  findLiveBySlug(slug: string): SiteRow | undefined {
    return this.store.db.select().from(sites).where(and(eq(sites.slug, slug), ne(sites.status, 'deleted'))).get()
  }

  findOwned(accountId: string, slug: string): SiteRow | undefined {
    return this.store.db.select().from(sites).where(and(eq(sites.accountId, accountId), eq(sites.slug, slug), ne(sites.status, 'deleted'))).get()
  }

  /** The account's live sites, oldest first. */
  listOwned(accountId: string): SiteRow[] {
    return this.owned().all({ accountId })
  }

  /** `listOwned` with only the columns a site's view shows (GET /sites/). */
  listOwnedForViews(accountId: string): SiteViewRow[] {
    return this.ownedForViews().all(accountId)
  }

  /** Every live (not deleted) site of the box, oldest first (berth sites list). */
  listLive(): SiteRow[] {
    return this.store.db.select().from(sites).where(ne(sites.status, 'deleted')).orderBy(asc(sites.createdAt), asc(sql`rowid`)).all()
  }

  listWithStatus(statuses: SiteStatus[]): SiteRow[] {
    return this.store.db.select().from(sites).where(inArray(sites.status, statuses)).all()
  }

  countForSubscription(subscriptionId: string): number {
    return this.store.db.select({ n: sql<number>`count(*)` }).from(sites).where(and(eq(sites.subscriptionId, subscriptionId), ne(sites.status, 'deleted'))).get()!.n
  }

  /** Sets the status (and error); a suspension it replaces is forgotten (`suspend` makes one). */
  setStatus(id: string, status: SiteStatus, at: number, error: string | null = null): void {
    this.changing(id, () => {
      this.store.db.update(sites).set({ status, error, suspendedBy: null, suspendedReason: null, updatedAt: at }).where(eq(sites.id, id)).run()
    })
  }

  /** `suspended` by `by`, with its reason (shown to the owner in the site's `suspension`). */
  suspend(id: string, by: Suspender, reason: string | null, at: number): SiteRow {
    return this.changing(id, () =>
      this.store.db.update(sites).set({ status: 'suspended', suspendedBy: by, suspendedReason: reason, updatedAt: at }).where(eq(sites.id, id)).returning().get(),
    )
  }

  /** The slugs of the given sites, by id (one query for a list's worth; deleted sites included). */
  slugsOf(ids: string[]): Map<string, string> {
    if (ids.length === 0) return new Map()
    return new Map(this.slugsById().all({ ids: JSON.stringify(ids) }).map((r) => [r.id, r.slug]))
  }

  /** The slugs of the live sites billed under each subscription, oldest first (one query for a list's worth). */
  slugsBySubscription(subscriptionIds: string[]): Map<string, string[]> {
    const out = new Map<string, string[]>()
    if (subscriptionIds.length === 0) return out
    for (const r of this.slugsBySubscriptions().all({ ids: JSON.stringify(subscriptionIds) })) {
      const slugs = out.get(r.subscriptionId!)
      if (slugs) slugs.push(r.slug)
      else out.set(r.subscriptionId!, [r.slug])
    }
    return out
  }

  /** The live (not deleted) sites billed under one subscription, oldest first. */
  listForSubscription(subscriptionId: string): SiteRow[] {
    return this.store.db.select().from(sites).where(and(eq(sites.subscriptionId, subscriptionId), ne(sites.status, 'deleted'))).orderBy(asc(sites.createdAt), asc(sql`rowid`)).all()
  }

  /**
   * Gives the site another SSH port after its current one turned out to be taken on the host
   * (HostPortTakenError); `taken` is skipped even if it looks free by the time of the call.
   */
  replaceSshPort(siteId: string, taken: number): void {
    if (!this.ssh) return
    this.store.write(() => {
      this.store.db.update(sites).set({ sshPort: null }).where(eq(sites.id, siteId)).run()
      this.assignSshPorts(new Set([taken]))
    })
  }

  setPlan(ids: string[], planSlug: string, at: number): void {
    if (ids.length === 0) return
    this.store.write(() => {
      this.store.db.update(sites).set({ planSlug, updatedAt: at }).where(inArray(sites.id, ids)).run()
      this.assignSshPorts()
    })
  }

  /** The site's HSTS max-age in seconds, null for none (the owner's setting, sent by the edge over HTTPS). */
  setHstsMaxAge(id: string, maxAge: number | null, at: number): SiteRow {
    return this.store.write(() =>
      this.store.db.update(sites).set({ hstsMaxAge: maxAge, updatedAt: at }).where(eq(sites.id, id)).returning().get(),
    )
  }

  /**
   * An app site's runtime and the release it serves (issue 39); a first runtime moves the site to
   * the app image for good (SiteRunner.spec). `live` absent: the release is left as it is; null:
   * none serves (a restored home from before the first release).
   */
  setApp(id: string, app: { runtime: AppRuntime; live?: string | null }, at: number): SiteRow {
    return this.store.write(() =>
      this.store.db.update(sites).set({ runtime: app.runtime, ...(app.live !== undefined ? { liveDeploymentId: app.live } : {}), updatedAt: at }).where(eq(sites.id, id)).returning().get(),
    )
  }

  /**
   * The port of the live web process in the site's container (the edge connects to it), null for
   * the front; written only when it changed, so the edge's directory keeps its cache otherwise.
   */
  setWebPort(slug: string, port: number | null): void {
    this.store.write(() =>
      this.store.db.update(sites).set({ webPort: port })
        .where(and(eq(sites.slug, slug), ne(sites.status, 'deleted'), port === null ? isNotNull(sites.webPort) : or(isNull(sites.webPort), ne(sites.webPort, port))))
        .run(),
    )
  }

  /** `pending_deletion` until `deadline`; the error of a failed site is kept for its restore. */
  scheduleDeletion(id: string, deadline: number, at: number): SiteRow {
    return this.changing(id, () =>
      this.store.db.update(sites).set({ status: 'pending_deletion', deletionScheduledFor: deadline, updatedAt: at }).where(eq(sites.id, id)).returning().get(),
    )
  }

  /** Back to `status` from `pending_deletion`; the suspension it had is kept only if `status` is `suspended`. */
  cancelDeletion(id: string, status: SiteStatus, at: number): SiteRow {
    const unsuspended = status === 'suspended' ? {} : { suspendedBy: null, suspendedReason: null }
    return this.changing(id, () =>
      this.store.db.update(sites).set({ status, deletionScheduledFor: null, ...unsuspended, updatedAt: at }).where(eq(sites.id, id)).returning().get(),
    )
  }

  /** Sites pending deletion whose grace period has ended at `now`. */
  listDueForDeletion(now: number): SiteRow[] {
    return this.store.db.select().from(sites).where(and(eq(sites.status, 'pending_deletion'), lte(sites.deletionScheduledFor, now))).all()
  }

  markDeleted(id: string, at: number): void {
    this.changing(id, () => {
      this.store.db.update(sites).set({ status: 'deleted', deletedAt: at, updatedAt: at }).where(eq(sites.id, id)).run()
    })
  }
}
