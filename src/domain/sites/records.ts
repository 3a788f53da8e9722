import type { SiteRow } from '../../store/schema'
import type { AppRuntime, SiteStatus, Suspender } from '../../core/enums'

/**
 * What other areas read and write of the sites (through this area's index.ts): the methods of
 * SitesRepository they use, which implements it. The repository itself is this area's own; a
 * consumer takes a Pick of this, the composition root hands it the repository.
 */
export interface SiteRecords {
  find(id: string): SiteRow | undefined
  /** The live (not deleted) site holding `slug`, whoever owns it. */
  findLiveBySlug(slug: string): SiteRow | undefined
  findOwned(accountId: string, slug: string): SiteRow | undefined
  /** The account's live sites, oldest first. */
  listOwned(accountId: string): SiteRow[]
  /** Every live (not deleted) site of the box, oldest first (berth sites list). */
  listLive(): SiteRow[]
  listWithStatus(statuses: SiteStatus[]): SiteRow[]
  /** Sets the status (and error); a suspension it replaces is forgotten (`suspend` makes one). */
  setStatus(id: string, status: SiteStatus, at: number, error?: string | null): void
  /** `suspended` by `by`, with its reason (shown to the owner in the site's `suspension`). */
  suspend(id: string, by: Suspender, reason: string | null, at: number): SiteRow
  /** The slugs of the given sites, by id (one query for a list's worth; deleted sites included). */
  slugsOf(ids: string[]): Map<string, string>
  /** An app site's runtime and the release it serves (issue 39). */
  setApp(id: string, app: { runtime: AppRuntime; live?: string | null }, at: number): SiteRow
  /** The port of the live web process in an app site's container, which the edge connects to; null: its front (8080). */
  setWebPort(slug: string, port: number | null): void
  /** `pending_deletion` until `deadline`; the error of a failed site is kept for its restore. */
  scheduleDeletion(id: string, deadline: number, at: number): SiteRow
}
