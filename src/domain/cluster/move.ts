import { CONTROL_NODE, type Placement } from '../../drivers/cluster/types'
import { iso, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteStatus } from '../../core/enums'
import { conflict, invalid, notFound, unavailable } from '../errors'
import type { NodesRepository } from './repository'
import type { EdgeProbe, SiteTransfer } from './site-transfer'
import type { MoveView } from './views'
import type { SiteRecords } from '../sites'
import type { SiteRow } from '../../store/schema'
import type { DatabaseCarrier } from '../databases'
import { noSteps, type OnStep } from './steps'

/** How long a move waits for berth serve's edge to serve the moved site before it says it does not yet. */
const EDGE_SERVES_WITHIN_MS = 30_000

/** Sites that have a service and files to move (the others have nothing on any node). */
const MOVABLE: SiteStatus[] = ['active', 'suspended', 'pending_deletion']

export interface SiteMoverDeps {
  sites: Pick<SiteRecords, 'findLiveBySlug'>
  nodes: Pick<NodesRepository, 'find'>
  placement: Pick<Placement, 'nodeOf' | 'removeVolumeOn'>
  transfer: Pick<SiteTransfer, 'archive' | 'bringUp' | 'carryImage'>
  /** The site's databases: their servers on the old node go with its volume (domain/databases/placement.ts). Absent: none. */
  databases?: Pick<DatabaseCarrier, 'has' | 'removeOn'>
  /**
   * berth serve's edge (drivers/cluster/edge-probe.ts): the time the site did not serve is
   * measured there, from its first "being brought back" page to its first answer from the
   * site's new container. Absent: from the switch's start to the site's answer on its node.
   */
  edge?: EdgeProbe
  clock: Clock
  log: Logger
  /** Milliseconds from a fixed point, for the time the site did not serve; performance.now by default. */
  now?: () => number
}

/**
 * `berth sites move SLUG --to NODE` (docs/cluster.md, "Moving a site"): an archive of the site
 * (taken frozen, while it still serves), then the switch: its service on the old node stops, the
 * site is pinned to the target, its files put back there from that archive and its container
 * started; once it answers, its volume on the old node is removed. The site answers the edge's
 * "being brought back" page (503) from the stop to the answer, and the move says how long that
 * was. What the site wrote between the archive and the stop (seconds) is not carried over.
 */
export class SiteMover {
  private now: () => number

  constructor(private d: SiteMoverDeps) {
    this.now = d.now ?? (() => performance.now())
  }

  /**
   * 404 (param `slug`) for an unknown site, 409 for a site with nothing to move (provisioning,
   * failed) or already on the target, 422 (param `to`) for a target that is unknown, removed,
   * down or draining.
   */
  async move(slug: string, to: string, onStep: OnStep = noSteps): Promise<MoveView> {
    const site = this.d.sites.findLiveBySlug(slug)
    if (!site) throw notFound(`No site '${slug}'; berth sites list shows the sites of this box.`, 'slug')
    if (!MOVABLE.includes(site.status)) throw conflict(`Site '${slug}' is ${site.status}: it runs nowhere, so there is nothing to move.`, 'slug')
    this.requireTarget(to)
    const from = await this.d.placement.nodeOf(slug)
    if (from === to) throw conflict(`Site '${slug}' already runs on ${to}.`, 'to')
    const started = this.now()
    // The image first, while the site serves: an app site's (berth/app:1, 632 MB) took 21 s on the
    // lab when its node got it in the switch, all of it without service.
    const carried = await this.d.transfer.carryImage(site, to).catch((err: Error) => {
      throw unavailable(`Site '${slug}' was not moved: its image could not be put on ${to} (${err.message}); nothing was moved, it serves where it was.`)
    })
    if (carried) onStep({ step: 'image_carried', slug, node: to, image: carried, ms: Math.round(this.now() - started) })
    const backupStarted = this.now()
    const archive = await this.d.transfer.archive(site)
    onStep({ step: 'backup_taken', slug, archive: archive.id, bytes: archive.sizeBytes, ms: Math.round(this.now() - backupStarted) })
    let stoppedAt = this.now()
    try {
      await this.d.transfer.bringUp(site, to, archive, { fallback: from, edgeLetGo: () => (stoppedAt = this.now()), onStep })
    } catch (err) {
      const back = from ? await this.d.placement.nodeOf(slug).catch(() => null) : null
      this.d.log.error('a move failed', { site: slug, from, to, back_on: back, error: (err as Error).message })
      throw unavailable(`Site '${slug}' could not start on ${to} (${(err as Error).message}). ${back === from && from ? `It was put back on ${from}, with its own files (nothing lost), after ${((this.now() - stoppedAt) / 1000).toFixed(1)} s without service.` : 'It could not be put back where it was: berth nodes list shows where it is; move it again once the reason is fixed.'}`)
    }
    // As visitors see it: until berth serve's edge serves the site from its new container (it
    // hears of it through the node's events), which may be later than its answer to this process.
    const edgeServes = this.d.edge ? await this.d.edge.until(slug, 'served', EDGE_SERVES_WITHIN_MS) : null
    const servingAt = this.now()
    if (edgeServes === false) this.d.log.warn('a moved site answers on its node but berth serve\'s edge did not serve it yet', { site: slug, to, waited_ms: EDGE_SERVES_WITHIN_MS })
    onStep({ step: 'serving', slug, node: to, outage_ms: Math.round(servingAt - stoppedAt), edge_serves: edgeServes })
    if (from) {
      const removed = await this.removeOldDatabases(site, from).then(() => this.d.placement.removeVolumeOn(slug, from)).then(() => true, (err) => {
        this.d.log.warn('the volume of a moved site could not be removed from its old node; remove it by hand', { site: slug, node: from, error: (err as Error).message })
        return false
      })
      onStep({ step: 'old_volume_removed', slug, node: from, removed })
    }
    const view: MoveView = {
      slug, from: from ?? CONTROL_NODE, to, archive: { id: archive.id, created_at: iso(archive.createdAt) },
      unavailable_ms: Math.round(servingAt - stoppedAt), total_ms: Math.round(this.now() - started),
      edge_serves: edgeServes,
    }
    this.d.log.info('site moved', { site: slug, from: view.from, to, unavailable_ms: view.unavailable_ms, ms: view.total_ms })
    return view
  }

  /** The site's databases on the node it left (carried to its target in the switch). */
  private async removeOldDatabases(site: SiteRow, from: string): Promise<void> {
    if (this.d.databases?.has(site)) await this.d.databases.removeOn(site, from)
  }

  /** The target must be the control plane or a node that takes sites (active). */
  private requireTarget(to: string): void {
    if (to === CONTROL_NODE) return
    const node = this.d.nodes.find(to)
    if (!node) throw invalid('to', `No node '${to}'; berth nodes list shows the nodes and their ids (the control plane is '${CONTROL_NODE}').`)
    if (node.state !== 'active') {
      throw invalid('to', `Node ${to} is ${node.state}: it takes no site${node.state === 'down' ? ' (its agent does not answer)' : ''}. Move the site to an active node (berth nodes list).`)
    }
  }
}
