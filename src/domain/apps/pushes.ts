import type { Logger } from '../../lib/logger'
import { CodedError, op, say } from '../errors'
import type { SiteRow } from '../../store/schema'
import type { SiteRecords } from '../sites'
import type { DeploySource } from './ports'

/** One event of a supervisor's `watch` (berth-supervise watch): a push waiting for its deployment. */
export interface PushEvent {
  event: 'push'
  id: string
  ref: string
  commit: string
  dir: string
}

/** Follows one site's supervisor; `close` ends the exec. `onEnd` when it ended by itself (the container stopped). */
export type WatchSite = (slug: string, onPush: (e: PushEvent) => void, onEnd: () => void) => { close(): void }

const PUSH_ID = /^psh_[A-Za-z0-9_-]{6,64}$/
const COMMIT = /^[0-9a-f]{40,64}$/
const REF = /^refs\/heads\/[A-Za-z0-9._/-]{1,200}$/
/** The branches a push deploys (Heroku's and Dokku's rule): a push to any other is refused, saying how to push it. */
export const DEPLOY_BRANCHES = ['main', 'master'] as const
/** Push ids remembered, so a push the supervisor replays to a new watch is not deployed twice. */
const SEEN_KEPT = 1000

/**
 * `git push` to an app site (issue 39): the pre-receive hook in the site's container puts the
 * pushed commit's tree in ~/app/incoming/{id} and tells the supervisor, whose `watch` Berth
 * follows for every running app site with SSH; each push becomes a deployment with a `push`
 * source, whose progress and result the hook prints to the pusher (AppDeployer, through
 * berth-supervise push-log and push-done). Kept in line with the sites by `keep` (each reconcile
 * pass, and a site's container start).
 */
export class AppPushes {
  private watches = new Map<string, { close(): void }>()
  private seen = new Set<string>()
  private stopped = false

  constructor(private d: {
    sites: Pick<SiteRecords, 'listLive' | 'find'>
    /** Whether the site's plan gives it SSH (a push needs it). */
    hasSsh: (site: SiteRow) => boolean
    watch: WatchSite
    deploy: (site: SiteRow, source: DeploySource) => unknown
    /** Ends the pusher's wait with a refusal (berth-supervise push-done). */
    refuse: (slug: string, pushId: string, message: string) => Promise<void>
    /** Moves a site that never deployed a source to the app image (its container restarts, files kept). */
    useAppImage: (site: SiteRow) => Promise<SiteRow>
    /** The id of the site's deployment still queued or running, if any. */
    unfinished: (site: SiteRow) => string | null
    log: Logger
  }) {}

  /**
   * Makes a site take `git push` (enableGitPush): a site still on its plan's image (berth/php,
   * which has no git) moves to the app image, whose supervisor makes ~/app.git and its hook, and
   * is followed at once. `moved` false: it already was an app site.
   */
  async prepare(site: SiteRow): Promise<{ site: SiteRow; moved: boolean }> {
    const moved = site.runtime === null
    // The move recreates the container: a deployment of the site queued or running (a deploy/
    // without a body reloading nginx and running deploy.sh) would lose its container mid-way.
    const running = moved ? this.d.unfinished(site) : null
    if (running !== null) {
      throw new CodedError('conflict', 'DEPLOYMENT_RUNNING', say`Deployment ${running} of site '${site.slug}' is still queued or running, and enabling git push restarts the site's container on the app image; wait until it has finished (${op('getDeployment', { tenant_slug: site.slug, deployment_id: running })}), then enable git push again.`, null, { deployment_id: running })
    }
    const row = moved ? await this.d.useAppImage(site) : site
    this.started(row.id)
    return { site: row, moved }
  }

  /** Follows every active app site with SSH, and no other. */
  keep(): void {
    if (this.stopped) return
    const wanted = new Map(this.d.sites.listLive().filter((s) => s.status === 'active' && s.runtime !== null && this.d.hasSsh(s)).map((s) => [s.slug, s]))
    for (const [slug, watch] of this.watches) {
      if (!wanted.has(slug)) {
        watch.close()
        this.watches.delete(slug)
      }
    }
    for (const site of wanted.values()) if (!this.watches.has(site.slug)) this.follow(site)
  }

  /**
   * A site's container started (the engine's event): an app site not followed yet (one that just
   * moved to the app image) is followed at once rather than at the next pass. One already followed
   * needs nothing: its watch opens again by itself on the new container.
   */
  started(siteId: string): void {
    const site = this.d.sites.find(siteId)
    if (!site || site.runtime === null || this.watches.has(site.slug)) return
    if (!this.stopped && site.status === 'active' && this.d.hasSsh(site)) this.follow(site)
  }

  stop(): void {
    this.stopped = true
    for (const w of this.watches.values()) w.close()
    this.watches.clear()
  }

  private follow(site: SiteRow): void {
    const slug = site.slug
    try {
      const watch = this.d.watch(slug, (e) => this.pushed(site.id, e), () => {
        if (this.watches.get(slug) === watch) this.watches.delete(slug)
      })
      this.watches.set(slug, watch)
    } catch (err) {
      this.d.log.debug('could not follow an app site\'s pushes', { site: slug, error: (err as Error).message })
    }
  }

  private pushed(siteId: string, e: PushEvent): void {
    const site = this.d.sites.find(siteId)
    // What the container says is checked as any input: its tenant controls it. An event Berth can
    // answer (its id and folder hold together) always gets an answer, so no pusher waits 30 minutes.
    if (!site || !PUSH_ID.test(e.id) || e.dir !== `/home/site/app/incoming/${e.id}`) {
      this.d.log.warn('ignored a push event that does not hold together', { site: site?.slug, id: String(e.id).slice(0, 80) })
      return
    }
    if (this.seen.has(e.id)) return
    if (this.seen.size >= SEEN_KEPT) this.seen.clear()
    this.seen.add(e.id)
    const refuse = (message: string) => void this.d.refuse(site.slug, e.id, `Not deployed: ${message}`).catch(() => {})
    if (site.status !== 'active') return refuse(`the site is ${site.status}; a push deploys to an active site only.`)
    const branch = String(e.ref).replace(/^refs\/heads\//, '')
    if (!REF.test(e.ref) || !(DEPLOY_BRANCHES as readonly string[]).includes(branch)) {
      const shown = branch.replace(/[^\x21-\x7e]/g, '?').slice(0, 200)
      return refuse(`Berth deploys pushes to main or master, and this push was to ${shown}. Push it as main: git push berth ${shown}:main`)
    }
    if (!COMMIT.test(e.commit)) return refuse('Berth could not read the pushed commit\'s id; push again.')
    this.d.log.info('a git push to an app site', { site: site.slug, ref: e.ref, commit: e.commit })
    try {
      this.d.deploy(site, { kind: 'push', ref: branch, commit: e.commit, dir: e.dir, push_id: e.id })
    } catch (err) {
      this.d.log.warn('could not queue the deployment of a push', { site: site.slug, error: (err as Error).message })
      refuse(`Berth could not queue this push's deployment: ${(err as Error).message}`)
    }
  }
}
