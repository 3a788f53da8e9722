import { iso, type Clock } from '../../lib/clock'
import type { JobRunner } from '../../jobs/runner'
import type { DeploymentRow, SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { conflict, notFound, op, say } from '../errors'
import type { DeploymentStatus } from '../../core/enums'
import type { Deployment } from './views'
import type { DeploymentsRepository } from './repository'
import type { ArchiveRecords } from '../archives'
import { KEPT_RELEASES, type DeploySource } from '../apps'

export const DEPLOY_JOB = 'deploy_site'
/** Finished deployments kept per site, and listed. */
export const KEPT_DEPLOYMENTS = 20

/**
 * deploySite and the deployment list. A deploy answers at once with the record
 * `queued`; the deploy job (deployer.ts) reloads the web server and runs the site's hook.
 */
export class DeploymentsService {
  constructor(private d: { store: Store; clock: Clock; repo: DeploymentsRepository; jobs: Pick<JobRunner, 'enqueue' | 'kick'>; archives: Pick<ArchiveRecords, 'find' | 'restoringOf'> }) {}

  /**
   * Queues a deployment of the site (conflict unless it is active). While one is still queued, that
   * one is returned instead of a second: it has not started, so it will deploy the files as they
   * are when it runs. One that is running is followed by the new one.
   */
  trigger(site: SiteRow): Deployment {
    const row = this.d.store.write(() => {
      const queued = this.d.repo.findQueued(site.id)
      if (queued) return queued
      const created = this.d.repo.insert({ id: crypto.randomUUID(), siteId: site.id, createdAt: this.d.clock.now() })
      this.d.jobs.enqueue(DEPLOY_JOB, created.id)
      this.d.repo.prune(site.id, KEPT_DEPLOYMENTS)
      return created
    })
    this.d.jobs.kick()
    return deploymentView(row, site.slug)
  }

  /**
   * Queues a deployment of a source (issue 39): an archive the API already received and checked
   * (its checked tar waits under `id` in the sources' work folder), a git repository, or a push.
   * Never merged with another: each is its own tree.
   */
  deploySource(site: SiteRow, source: DeploySource, id: string = crypto.randomUUID()): Deployment {
    const row = this.d.store.write(() => {
      const created = this.d.repo.insert({ id, siteId: site.id, createdAt: this.d.clock.now(), source: JSON.stringify(source) })
      this.d.jobs.enqueue(DEPLOY_JOB, created.id)
      this.d.repo.prune(site.id, KEPT_DEPLOYMENTS)
      return created
    })
    this.d.jobs.kick()
    return deploymentView(row, site.slug, new Set())
  }

  /** The id of the site's deployment still queued or running, if any (enableGitPush waits for none). */
  unfinished(site: SiteRow): string | null {
    return this.d.repo.findUnfinished(site.id)?.id ?? null
  }

  /** The site's deployments, newest first (the last KEPT_DEPLOYMENTS). */
  list(site: SiteRow): Deployment[] {
    const kept = new Set(this.d.repo.releasesOf(site.id, KEPT_RELEASES))
    return this.d.repo.listForSite(site.id, KEPT_DEPLOYMENTS).map((d) => deploymentView(d, site.slug, kept))
  }

  get(site: SiteRow, id: string): Deployment {
    return deploymentView(this.requireDeployment(site, id), site.slug, new Set(this.d.repo.releasesOf(site.id, KEPT_RELEASES)))
  }

  /**
   * rollbackDeployment: queues a new deployment that puts back the files deployment `id`
   * recorded, then reloads and runs the hook as a deploy does (deployer.ts). Never merged with a
   * queued deploy. conflict when that deployment's files are not kept (older than the feature,
   * pruned, not yet recorded) or a restore of the site is running.
   */
  rollback(site: SiteRow, id: string): Deployment {
    const slug = site.slug
    const row = this.d.store.write(() => {
      const target = this.requireDeployment(site, id)
      if (target.source !== null) return this.rollbackToRelease(site, target)
      const archive = target.archiveId ? this.d.archives.find(target.archiveId) : undefined
      if (!archive || archive.siteId !== site.id || (archive.status !== 'ready' && archive.status !== 'restoring')) {
        const why = target.status === 'queued' || target.status === 'running'
          ? `it has not recorded them yet (it is ${target.status}); wait until it has finished`
          : `it was made before Berth recorded deployments' files, its files were dropped (only the newest deployments keep theirs), or recording them failed; roll back to one with files_recorded true (${op('listDeployments', { tenant_slug: slug })})`
        throw conflict(`Deployment ${id} of site '${slug}' has no recorded files to put back: ${why}.`, 'deployment_id')
      }
      const restoring = this.d.archives.restoringOf(site.id)
      if (restoring && restoring.kind !== 'deployment') {
        throw conflict(`A restore of site '${slug}' from ${restoring.kind} ${restoring.id} is running; roll back once it is done.`)
      }
      const created = this.d.repo.insert({ id: crypto.randomUUID(), siteId: site.id, createdAt: this.d.clock.now(), rollbackOf: target.id, archiveId: archive.id })
      this.d.jobs.enqueue(DEPLOY_JOB, created.id)
      this.d.repo.prune(site.id, KEPT_DEPLOYMENTS)
      return created
    })
    this.d.jobs.kick()
    return deploymentView(row, slug)
  }

  /** A rollback of an app site: a switch back to a kept release (nothing built again). */
  private rollbackToRelease(site: SiteRow, target: DeploymentRow): DeploymentRow {
    const slug = site.slug
    if (!this.d.repo.releasesOf(site.id, KEPT_RELEASES).includes(target.id)) {
      const why = target.status === 'succeeded' ? `only the newest ${KEPT_RELEASES} releases are kept` : `it is ${target.status}, and only a deployment that succeeded left a release`
      throw conflict(`Deployment ${target.id} of site '${slug}' has no release to switch back to: ${why}; roll back to one with files_recorded true (${op('listDeployments', { tenant_slug: slug })}), or deploy its source again.`, 'deployment_id')
    }
    const created = this.d.repo.insert({ id: crypto.randomUUID(), siteId: site.id, createdAt: this.d.clock.now(), rollbackOf: target.id, runtime: target.runtime })
    this.d.jobs.enqueue(DEPLOY_JOB, created.id)
    this.d.repo.prune(site.id, KEPT_DEPLOYMENTS)
    return created
  }

  private requireDeployment(site: SiteRow, id: string): DeploymentRow {
    const slug = site.slug
    const row = this.d.repo.findForSite(site.id, id)
    if (!row) throw notFound(say`No deployment ${id} of site '${slug}'; ${op('listDeployments', { tenant_slug: slug })} lists them.`, 'deployment_id')
    return row
  }
}

/** A deployment as the API shows it (also the `data` of its events). */
export function deploymentView(d: DeploymentRow, slug: string, keptReleases?: ReadonlySet<string>): Deployment {
  return {
    id: d.id,
    site_slug: slug,
    status: d.status as DeploymentStatus,
    created_at: iso(d.createdAt),
    started_at: d.startedAt === null ? null : iso(d.startedAt),
    finished_at: d.finishedAt === null ? null : iso(d.finishedAt),
    output: d.output,
    error: d.error,
    rollback_of: d.rollbackOf,
    files_recorded: d.source !== null ? keptReleases?.has(d.id) === true : d.archiveId !== null,
    source: d.source === null ? null : sourceView(JSON.parse(d.source) as DeploySource),
    runtime: d.runtime,
    commit: d.commit,
  }
}

/** A source as the deployment shows it: where the tree came from, never a secret's value. */
function sourceView(s: DeploySource): Deployment['source'] {
  if (s.kind === 'archive') return { kind: 'archive', format: s.format, git: null, ref: null }
  if (s.kind === 'git') return { kind: 'git', format: null, git: s.url, ref: s.ref }
  return { kind: 'push', format: null, git: null, ref: s.ref }
}
