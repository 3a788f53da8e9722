/**
 * The steps of the long node operations, as they happen: a move (SiteMover), an evacuation and
 * a drain with --move (NodesService). The domain hands each to an `onStep` callback the caller
 * gives (a port: no IO here); berth serve's admin socket sends them to the command as progress
 * lines (admin/steps.ts words them), which prints them as they come (docs/cluster.md, "What a
 * move prints"). A step that fails is no step: the operation ends in its refusal, as without a
 * callback.
 */

/** A move's steps, in order (`stopped` to `started` are SiteTransfer's, also an evacuation's). */
export type MoveStep =
  /** The site's image was not on the target: carried there (no registry) before anything stopped, while the site served. */
  | { step: 'image_carried'; slug: string; node: string; image: string; ms: number }
  /** The move's archive is made (the site frozen a moment, still serving): its size and how long it took. */
  | { step: 'backup_taken'; slug: string; archive: string; bytes: number | null; ms: number }
  /** The site is pinned to the target: its service on the old node (`from`; null when none is known) stops, the edge answers its "being brought back" page. */
  | { step: 'stopped'; slug: string; from: string | null; to: string }
  /** Its volume is made on the target (no container runs there yet). */
  | { step: 'volume_made'; slug: string; node: string }
  /** Its databases are up on the target holding its data (dumped on the old node, restored there: docs/cluster.md "Databases on nodes"). */
  | { step: 'databases_carried'; slug: string; node: string; databases: number; bytes: number; ms: number }
  /** Its files are put back there from the archive: the archive's size, how long it took. */
  | { step: 'files_restored'; slug: string; node: string; bytes: number | null; ms: number }
  /** It runs on the target and answers there. */
  | { step: 'started'; slug: string; node: string }
  /** Visitors get it again (berth serve's edge serves it, or it answers on its node when the edge cannot be asked): how long they did not. */
  | { step: 'serving'; slug: string; node: string; outage_ms: number; edge_serves: boolean | null }
  /** Its volume on the old node is removed (`removed` false: it could not be, the log says why). */
  | { step: 'old_volume_removed'; slug: string; node: string; removed: boolean }

/** An evacuation's steps per site, around SiteTransfer's (`stopped` .. `started`). */
export type EvacuationStep =
  /** Its restore begins on `to`, from `archive` (null: none found, it comes back with an empty home). */
  | { step: 'evacuating'; slug: string; to: string; archive: string | null; data_from: string | null }
  /** What became of it: as EvacuatedSite's result. */
  | { step: 'evacuated'; slug: string; node: string | null; result: 'restored' | 'empty' | 'failed'; problem: string | null }

/** A drain with --move's steps per site, around the move's own. */
export type DrainStep =
  | { step: 'moving'; slug: string; to: string }
  | { step: 'not_moved'; slug: string; problem: string }

export type NodeStep = MoveStep | EvacuationStep | DrainStep

/** Where an operation hands its steps; the default drops them. */
export type OnStep = (step: NodeStep) => void

export const noSteps: OnStep = () => {}
