import type { Placement } from '../../drivers/cluster/types'
import { HostPortTakenError } from '../../drivers/runtime/types'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { ArchiveRow, SiteRow } from '../../store/schema'
import { type ArchiveRecords, CREATE_ARCHIVE_JOB, type CreateArchiveJob, type RestoreArchiveJob } from '../archives'
import { conflict, unavailable } from '../errors'
import type { ArchiveBytes, ArchiveSource } from '../offsite'
import type { SiteRecords, SiteRunner } from '../sites'
import type { JobHandler } from '../../jobs/runner'
import { noSteps, type OnStep } from './steps'
import { MOVE_RESTORE_JOB } from './move-restore'
import type { DatabaseCarrier } from '../databases'

/** Runs of a site whose SSH port turned out to be taken on its new node (each moves it to another). */
const PORT_TRIES = 3

/**
 * The job kind that marks a site being switched to another node (its subject: the site's id),
 * recorded as running while berth serve moves it, from before its old container stops until it
 * answers on the new one: the edge answers it with its "being brought back" page (503,
 * Retry-After) from the moment it reads the mark, without trying the old container, and its view
 * shows it `recovering` with why (docs/cluster.md, "Moving a site").
 */
export const MOVE_SITE_JOB = 'move_site'

/**
 * The handler of MOVE_SITE_JOB, which runs when berth serve starts again after it was killed in
 * the middle of a move: nothing is left to do here, the move's restore (MOVE_RESTORE_JOB, run
 * again the same way: move-restore.ts) finishes the site; ending the job lifts the mark.
 */
export class MoveMarkHandler implements JobHandler {
  attempts = 1
  async run(): Promise<void> {}
  async failed(): Promise<void> {}
}

/** Without a probe of berth serve's edge (which reads the mark at once: the move runs in berth serve), the switch waits this long after the mark for the requests in flight. */
const EDGE_NOTICE_MS = 150
/** How long the switch waits for the edge to answer the marked site with its own page. */
const EDGE_PAGED_WITHIN_MS = 2_000

/**
 * berth serve's edge as a visitor reaches it (drivers/cluster/edge-probe.ts), asked for a site
 * until it answers as wanted: `paged`, with one of its own pages (it no longer sends the site's
 * requests to a container); `served`, from the site's container. True once it did; false when it
 * did not within `withinMs`; null when the edge does not answer at all (berth serve is not running).
 */
export interface EdgeProbe {
  until(slug: string, want: 'paged' | 'served', withinMs: number): Promise<boolean | null>
}

export interface SiteTransferDeps {
  placement: Pick<Placement, 'placeOn' | 'prepareSite' | 'carryImage'>
  runner: Pick<SiteRunner, 'run' | 'stop' | 'markDown' | 'holding' | 'spec'>
  sites: Pick<SiteRecords, 'find'>
  archives: Pick<ArchiveRecords, 'insert' | 'find' | 'transition' | 'listOf' | 'restoringOf'>
  /**
   * The archive jobs (domain/archives/jobs.ts), run here rather than queued: the node operation
   * waits for each, and the archive's row tells the owner the same story as a restore they asked for.
   */
  create: Pick<CreateArchiveJob, 'run' | 'failed'>
  restore: Pick<RestoreArchiveJob, 'run' | 'failed'>
  /** The archive's bytes on this box, or brought back from off the box (domain/offsite/fetch-back.ts). */
  bytes: ArchiveBytes
  /**
   * Runs `work` recorded as a running job of `kind` on `subjectId` (JobRunner.runHere): the
   * archive is seen under way from before its claim to the end (the upkeep neither settles it as
   * stranded nor starts the site), and after a kill -9 the next start runs the kind's handler,
   * which finishes it.
   */
  underway(kind: string, subjectId: string, work: () => Promise<void>): Promise<void>
  /**
   * The site's databases (domain/databases/placement.ts): a move carries each to its target
   * (dump on the node it leaves, restore there) before the site starts there. Absent: none.
   */
  databases?: Pick<DatabaseCarrier, 'has' | 'carry' | 'removeOn'>
  /** berth serve's edge, asked so that the switch starts once it stopped sending the site's requests to its container; absent: a fixed wait. */
  edge?: EdgeProbe
  clock: Clock
  log: Logger
}

/** An archive a site can come back from, and where its bytes were. */
export interface ArchiveChoice {
  archive: ArchiveRow
  source: Exclude<ArchiveSource, 'missing'>
}

/**
 * What moving and evacuating share: a site's archive taken, its newest usable archive found, and
 * the site brought up on another node from an archive: placed there, run there once (which makes
 * its volume on that node), its files put back by the restore job (frozen, then restarted), so
 * the edge, which shows its "being brought back" page (503) until then, never serves the empty
 * home in between.
 */
export class SiteTransfer {
  constructor(private d: SiteTransferDeps) {}

  /**
   * A new archive of the site, made now by the archive job (its home written while the site is
   * frozen, so it is one moment of it). Kind `backup`: it counts among the daily backups and
   * their retention prunes it, so a move never fills the owner's snapshot slots. Throws when it
   * could not be made.
   */
  async archive(site: SiteRow): Promise<ArchiveRow> {
    const id = crypto.randomUUID()
    this.d.archives.insert({ id, siteId: site.id, kind: 'backup', storageKey: `${site.id}/${id}.tar.zst`, createdAt: this.d.clock.now() })
    try {
      await this.d.underway(CREATE_ARCHIVE_JOB, id, () => this.d.create.run(id))
    } catch (err) {
      await this.d.create.failed(id)
      throw unavailable(`The archive of site '${site.slug}' could not be made (${(err as Error).message}); nothing was moved.`)
    }
    const made = this.d.archives.find(id)
    if (made?.status !== 'ready') throw unavailable(`The archive of site '${site.slug}' could not be made (${made?.error ?? 'it is gone'}); nothing was moved.`)
    return made
  }

  /**
   * The newest archive the site can come back from: its newest ready backup or snapshot, a
   * deployment's record only when it has neither (it leaves ~/.ssh out), the first of them whose
   * bytes are on this box or come back from off the box. null when none.
   */
  async newestUsable(site: SiteRow): Promise<ArchiveChoice | null> {
    const ready = (kind: 'backup' | 'snapshot' | 'deployment') => this.d.archives.listOf(site.id, kind).filter((a) => a.status === 'ready')
    const files = [...ready('backup'), ...ready('snapshot')].sort((a, b) => b.createdAt - a.createdAt)
    for (const archive of [...files, ...ready('deployment')]) {
      try {
        const source = await this.d.bytes.ensureLocal(archive)
        if (source !== 'missing') return { archive, source }
        this.d.log.warn('an archive of a site has no bytes on this box nor off it; trying an older one', { site: site.slug, archive: archive.id })
      } catch (err) {
        this.d.log.warn('an archive of a site could not be brought back from off the box; trying an older one', { site: site.slug, archive: archive.id, error: (err as Error).message })
      }
    }
    return null
  }

  /**
   * Pins the site to `nodeId` (its service elsewhere stops) and runs it there with the files of
   * `archive`, or with an empty home when null. Resolves once an active site answers there; a
   * suspended or pending one is left with its files and no running container, as the reconciler
   * keeps it. The edge answers "being brought back" from the stop until the site answers with
   * its files: the container's first run there (which makes its volume on that node) is never
   * handed to the edge.
   */
  async bringUp(site: SiteRow, nodeId: string, archive: ArchiveRow | null, opts: { fallback?: string | null; edgeLetGo?: () => void; onStep?: OnStep } = {}): Promise<void> {
    // The mark first (MOVE_SITE_JOB): berth serve's edge stops trying the site's container before
    // it stops, so visitors get the 503 page, never a 502 from a container gone under a request.
    await this.d.underway(MOVE_SITE_JOB, site.id, async () => {
      await this.edgeLetGo(site.slug)
      opts.edgeLetGo?.()
      await this.switchOver(site, nodeId, archive, opts.fallback, opts.onStep ?? noSteps)
    })
  }

  /** Resolves once berth serve's edge answers the marked site with its own page (or after EDGE_NOTICE_MS when it cannot be asked). */
  private async edgeLetGo(slug: string): Promise<void> {
    if (this.d.edge && await this.d.edge.until(slug, 'paged', EDGE_PAGED_WITHIN_MS) === true) return
    await Bun.sleep(EDGE_NOTICE_MS)
  }

  private async switchOver(site: SiteRow, nodeId: string, archive: ArchiveRow | null, fallback: string | null | undefined, onStep: OnStep): Promise<void> {
    const opts = { fallback }
    await this.d.runner.holding(site.slug, async () => {
      if (archive) {
        // One job from the claim to the end: the archive is `restoring` from before the switch, so
        // the healer and the reconcile pass leave the site to this (they skip a site being
        // restored) and the upkeep does not settle the archive as stranded. Killed -9 anywhere
        // in it, the next start runs the job's handler (MoveRestoreJob), which places the site
        // off the node it was leaving when the switch had not happened, then restores it.
        await this.d.underway(MOVE_RESTORE_JOB, archive.id, async () => {
          this.claimRestore(site, archive)
          let carried = false
          try {
            carried = await this.switchTo(site, nodeId, true, fallback ?? null, onStep)
          } catch (err) {
            await this.backTo(site, opts.fallback, nodeId, err)
            await this.d.restore.failed(archive.id)
            throw err
          }
          const restoring = performance.now()
          await this.restore(archive, () => this.backTo(site, opts.fallback, nodeId, null), carried)
          onStep({ step: 'files_restored', slug: site.slug, node: nodeId, bytes: archive.sizeBytes, ms: Math.round(performance.now() - restoring) })
        })
      } else {
        await this.switchTo(site, nodeId, false, fallback ?? null, onStep)
        if (this.d.sites.find(site.id)?.status === 'active') await this.runThere(site, true)
      }
      if (this.d.sites.find(site.id)?.status !== 'active') await this.d.runner.stop(site.slug)
      else onStep({ step: 'started', slug: site.slug, node: nodeId })
    })
  }

  /**
   * Pins the site to `nodeId` (its service elsewhere stops). With files to put back, only its
   * volume is made there: nothing serves an empty home (the edge learns of the site's start
   * there from the node's start events). Without, it runs there once (which makes it).
   */
  private async switchTo(site: SiteRow, nodeId: string, withFiles: boolean, from: string | null, onStep: OnStep): Promise<boolean> {
    await this.d.placement.placeOn(site.slug, nodeId)
    this.d.runner.markDown(site.slug)
    onStep({ step: 'stopped', slug: site.slug, from, to: nodeId })
    // Its databases first, with the site stopped (nothing writes): up on the target and holding
    // the data before the site starts there, so it is never active with a database that does not answer.
    const carried = from && this.d.databases?.has(site) ? await this.d.databases.carry(site, from, nodeId) : null
    if (carried) onStep({ step: 'databases_carried', slug: site.slug, node: nodeId, ...carried })
    if (withFiles) {
      await this.d.placement.prepareSite(this.d.runner.spec(site))
      onStep({ step: 'volume_made', slug: site.slug, node: nodeId })
    } else await this.runThere(site, false)
    this.d.runner.markDown(site.slug)
    return carried !== null
  }

  /** SiteRunner.run on the site's current row; an SSH port taken on the new node moves it to another (the runner did) and runs again. */
  private async runThere(site: SiteRow, waitForAnswer: boolean): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const current = this.d.sites.find(site.id) ?? site
      try {
        await this.d.runner.run(current, { waitForAnswer })
        return
      } catch (err) {
        if (!(err instanceof HostPortTakenError) || attempt === PORT_TRIES) throw err
      }
    }
  }

  /** The site's image on `nodeId`'s engine, before anything stops (its name when it was carried now, else null). */
  async carryImage(site: SiteRow, nodeId: string): Promise<string | null> {
    const { image } = this.d.runner.spec(site)
    return (await this.d.placement.carryImage(image, nodeId)) ? image : null
  }

  /** Marks the archive `restoring` (ready → restoring); refused while another restore of the site runs. */
  private claimRestore(site: SiteRow, archive: ArchiveRow): void {
    if (this.d.archives.restoringOf(site.id) || !this.d.archives.transition(archive.id, ['ready'], { status: 'restoring' })) {
      throw conflict(`Another restore of site '${site.slug}' is running; wait until it is done and try again.`)
    }
  }

  /**
   * The restore job on the claimed archive (restoring → ready with restored_at), here and now. On
   * a failure `before` runs first (the move's way back), then the job's own `failed`, which starts
   * the site again wherever it is placed then.
   */
  private async restore(archive: ArchiveRow, before: () => Promise<void>, carried: boolean): Promise<void> {
    try {
      // The databases a move carried are newer than the archive's dumps (taken while the site served).
      await this.d.restore.run(archive.id, { databases: !carried })
    } catch (err) {
      await before()
      await this.d.restore.failed(archive.id)
      throw err
    }
  }

  /**
   * A move whose target did not take the site: it is pinned back to the node it served from,
   * whose volume still holds its files (the move removes it only once the target serves), so the
   * restore's `failed` starts it there, files intact, within seconds. Nothing to go back to (an
   * evacuation): nothing done.
   */
  private async backTo(site: SiteRow, fallback: string | null | undefined, target: string, cause: unknown): Promise<void> {
    if (!fallback || fallback === target) return
    await this.d.placement.placeOn(site.slug, fallback)
    this.d.runner.markDown(site.slug)
    this.d.log.warn('a move\'s target did not take the site: it is put back where it served', { site: site.slug, target, back_on: fallback, error: cause instanceof Error ? cause.message : undefined })
  }

}
