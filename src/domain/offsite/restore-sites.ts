import type { SiteStatus } from '../../core/enums'
import type { ArchiveStore } from '../../drivers/archives/types'
import { HostPortTakenError, type ContainerRuntime } from '../../drivers/runtime/types'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { ArchiveDumps, ArchiveRecords, HomeTarballs, WorkFolder } from '../archives'
import type { SiteRecords, SiteRunner } from '../sites'
import { isArchiveOf, type ManifestArchive, type OffsiteManifest } from './manifest'

/**
 * `berth restore`, second half: with the store and the archives back (restore.ts), every site
 * that has a container comes back on this engine as `berth serve` would run it (SiteRunner, the
 * same spec, network, volume and SSH port), its files first put back from its newest archive
 * that came back, the way a restore of an archive does (HomeTarballs.replaceHome), before the
 * container starts: the site never serves the image's default page in between. Active sites
 * run and answer; suspended and pending-deletion ones are made and stopped, as the reconcile
 * pass keeps them. Its databases are rebuilt from the same archive's dumps (ArchiveDumps), after
 * its files and before its container starts. DNS zones, keys, accounts and subscriptions are rows of the store: nothing to do.
 */

/** Statuses whose site has a container and files (the reconciler runs or stops them). */
const WITH_CONTAINER: SiteStatus[] = ['active', 'suspended', 'pending_deletion']
/** Statuses listed in the report with nothing to bring back. */
const WITHOUT_CONTAINER: SiteStatus[] = ['provisioning', 'failed']
/** Tries of a site whose SSH port turned out to be taken here (each moves it to another). */
const PORT_TRIES = 3

export interface SitesReturnDeps {
  sites: Pick<SiteRecords, 'listWithStatus' | 'find'>
  runner: Pick<SiteRunner, 'run' | 'stop' | 'spec'>
  runtime: Pick<ContainerRuntime, 'prepareSite' | 'homePath' | 'withSitePaused'>
  tar: HomeTarballs
  /** The local archive store the archives were put back into. */
  archives: Pick<ArchiveStore, 'get'>
  /** The archives' rows in the restored store, to settle those whose bytes did not come back. */
  archiveRows: Pick<ArchiveRecords, 'withStatus' | 'transition'>
  clock: { now(): number }
  work: WorkFolder
  log: Logger
  /** The databases' dumps in the archives (issue 40): each database of the store rebuilt from them. */
  dumps?: Pick<ArchiveDumps, 'take' | 'restore' | 'clear'>
}

/** What became of one site. */
export interface SiteOutcome {
  slug: string
  status: SiteStatus
  /** The archive its files came from; null when none came back. */
  archive: Pick<ManifestArchive, 'id' | 'kind' | 'created_at'> | null
  files: number | null
  bytes: number | null
  /** `serving`, `stopped` (suspended, pending deletion), `provisions on start`, `nothing to run`, or `failed`. */
  result: string
  /** True when the site is back as it was in the copy. */
  ok: boolean
  /** What went wrong, or what is missing (no archive: the site runs with an empty home). */
  problem: string | null
}

export class SitesReturn {
  constructor(private d: SitesReturnDeps) {}

  /** The sites of the restored store in the order they come back: the ones with a container first. */
  sites(): SiteRow[] {
    return [...this.d.sites.listWithStatus(WITH_CONTAINER), ...this.d.sites.listWithStatus(WITHOUT_CONTAINER)]
  }

  /**
   * Brings one site back. `landed` holds the ids of the archives that came back intact; the
   * site's files come from the first of its manifest's archives (newest first) among them, a
   * backup or snapshot before any deployment's record.
   */
  async bring(site: SiteRow, manifest: OffsiteManifest, landed: ReadonlySet<string>): Promise<SiteOutcome> {
    const base = { slug: site.slug, status: site.status, archive: null, files: null, bytes: null }
    if (site.status === 'provisioning') return { ...base, result: 'provisions on start', ok: true, problem: null }
    if (!WITH_CONTAINER.includes(site.status)) return { ...base, result: 'nothing to run', ok: true, problem: null }
    // checkManifest refused any other; kept here too, where an archive's id and key become paths.
    const listed = (manifest.sites.find((s) => s.id === site.id)?.archives ?? []).filter((a) => isArchiveOf(site.id, a))
    // A deployment's record (domain/deployments/files.ts) leaves out ~/.ssh: the site's files come
    // from its newest backup or snapshot, a deployment's record only when it has neither.
    const archive = listed.find((a) => landed.has(a.id) && a.kind !== 'deployment') ?? listed.find((a) => landed.has(a.id)) ?? null
    const outcome: SiteOutcome = { ...base, archive: archive && { id: archive.id, kind: archive.kind, created_at: archive.created_at }, result: 'failed', ok: false, problem: null }
    try {
      await this.d.runtime.prepareSite(this.d.runner.spec(site))
      // A container left on this engine (a restore over the same box) must not run over the swap.
      await this.d.runner.stop(site.slug)
      if (archive) Object.assign(outcome, await this.putFilesBack(site, archive))
      outcome.result = await this.start(site)
      outcome.ok = archive !== null
      if (!archive) outcome.problem = listed.length ? 'none of its archives came back intact: its home is empty' : 'no archive of it was copied: its home is empty'
    } catch (err) {
      outcome.problem = (err as Error).message
      this.d.log.error('could not bring a site back', { site: site.slug, error: outcome.problem })
    }
    return outcome
  }

  /**
   * The store copy lists every archive the box had; those whose bytes did not come back (made
   * after the last copy of them, never copied, or skipped as damaged) could not be restored:
   * they turn `failed`, saying why, so the backup list tells the truth and a restore of one is
   * refused up front instead of failing in its job. Returns how many.
   */
  settleArchives(landed: ReadonlySet<string>, manifest: OffsiteManifest): number {
    const error = `This archive was not among the copies the box was rebuilt from (berth restore of the copy made ${manifest.made_at}); it cannot be restored.`
    let settled = 0
    for (const row of this.d.archiveRows.withStatus(['creating', 'ready', 'restoring'])) {
      if (landed.has(row.id)) continue
      if (this.d.archiveRows.transition(row.id, ['creating', 'ready', 'restoring'], { status: 'failed', error, completedAt: row.completedAt ?? this.d.clock.now() })) settled++
    }
    return settled
  }

  /** The archive's files into the site's volume, then its databases' dumps into them, the container not running. */
  private async putFilesBack(site: SiteRow, archive: ManifestArchive): Promise<{ files: number; bytes: number }> {
    const [zstName, tarName] = [`${archive.id}.restore.tar.zst`, `${archive.id}.restore.tar`]
    await this.d.work.prepare()
    try {
      await this.d.archives.get(archive.storage_key, this.d.work.path(zstName))
      await this.d.tar.decompressFile(this.d.work.path(zstName), this.d.work.path(tarName))
      await this.d.work.remove(zstName)
      const dumps = (await this.d.dumps?.take(archive.id, this.d.work.path(tarName))) ?? null
      const counts = await this.d.tar.scanTar(this.d.work.path(tarName))
      const home = await this.d.runtime.homePath(site.slug)
      await this.d.runtime.withSitePaused(site.slug, () => this.d.tar.replaceHome(home, this.d.work.path(tarName)))
      await this.d.dumps?.restore(site, archive.id, dumps)
      return counts
    } finally {
      await this.d.work.remove(zstName, tarName)
      await this.d.dumps?.clear(archive.id)
    }
  }

  /** Runs the container: active sites until their web server answers, the others made and stopped. */
  private async start(site: SiteRow): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      const current = this.d.sites.find(site.id) ?? site
      try {
        await this.d.runner.run(current, { waitForAnswer: current.status === 'active' })
        break
      } catch (err) {
        // The runner moved the site to another port in the store; the next run uses it.
        if (!(err instanceof HostPortTakenError) || attempt === PORT_TRIES) throw err
      }
    }
    if (site.status === 'active') return 'serving'
    await this.d.runner.stop(site.slug)
    return 'stopped'
  }
}
