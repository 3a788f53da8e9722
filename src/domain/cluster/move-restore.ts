import { CONTROL_NODE, type Placement } from '../../drivers/cluster/types'
import type { JobHandler } from '../../jobs/runner'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { ArchiveRecords, RestoreArchiveJob } from '../archives'
import type { SiteRecords } from '../sites'
import type { NodesRepository } from './repository'

/**
 * The job kind of the restore that brings a site up on another node in a move or an evacuation
 * (subject: the archive id, claimed `restoring`; SiteTransfer runs it itself, recorded as running).
 * Its own kind, not the archive area's restore job, so that the next start of berth serve after a
 * kill -9 of it finishes the switch too: the claim is recorded before the site is placed on its
 * target (nothing then starts it on an empty home), so a kill between the two leaves the site on
 * the node it was leaving.
 */
export const MOVE_RESTORE_JOB = 'move_restore'

/** Node states that take no site: the node an evacuation or a drain --move is emptying, or a lost or removed one. */
const LEFT: readonly string[] = ['draining', 'down', 'removed']

export interface MoveRestoreDeps {
  restore: Pick<RestoreArchiveJob, 'run' | 'failed'>
  archives: Pick<ArchiveRecords, 'find'>
  sites: Pick<SiteRecords, 'find'>
  /** Absent on a single box: nothing is ever placed, the restore alone runs. */
  placement?: Pick<Placement, 'nodeOf' | 'placeOn' | 'choose'>
  nodes: Pick<NodesRepository, 'find'>
  /** The memory the site's plan reserves, in MiB (what placement needs free on a node). */
  memoryMbOf(site: SiteRow): number
  log: Logger
}

/**
 * The handler of MOVE_RESTORE_JOB, which runs when berth serve starts again after a kill -9 in the
 * middle of a move or an evacuation. When the site is still placed on a node that takes no site
 * (draining, down or removed: the switch had not happened), it is first placed on the active node
 * with the most room for it (Placement.choose), as the evacuation would have; then the archive
 * area's restore job puts its files back there and starts it. A site already on its target, or
 * on an active node (a `sites move` killed before its switch: the restore brings it back where it
 * served), is restored where it is. Its failure is the restore job's: the archive ready again, the
 * site started where it is then.
 */
export class MoveRestoreJob implements JobHandler {
  attempts = 2

  constructor(private d: MoveRestoreDeps) {}

  async run(archiveId: string): Promise<void> {
    await this.placeOffLeftNode(archiveId)
    await this.d.restore.run(archiveId)
  }

  async failed(archiveId: string): Promise<void> {
    await this.d.restore.failed(archiveId)
  }

  private async placeOffLeftNode(archiveId: string): Promise<void> {
    const archive = this.d.archives.find(archiveId)
    if (!this.d.placement || archive?.status !== 'restoring') return
    const site = this.d.sites.find(archive.siteId)
    if (!site || site.status === 'deleted') return
    const from = await this.d.placement.nodeOf(site.slug)
    if (!from || from === CONTROL_NODE) return
    const state = this.d.nodes.find(from)?.state ?? 'removed'
    if (!LEFT.includes(state)) return
    const to = await this.d.placement.choose(this.d.memoryMbOf(site), [from])
    await this.d.placement.placeOn(site.slug, to)
    this.d.log.warn('a move or evacuation was stopped before its switch: the site is placed on another node before its restore runs again', { site: site.slug, from, from_state: state, to, archive: archiveId })
  }
}
