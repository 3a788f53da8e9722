/** Apps (issue 39): deployments with a source, their releases and the app image's supervisor, over the sites area's parts. */
import {
  AppDeployer, AppIntake, AppPushes, AppSiteRecords, AppStarts, AppViews, KEPT_RELEASES, PhpEnvs, SourceRefusedError,
  type AppEnv, type AppSources, type AppSupervisor, type DeploySource, type SourceRefusal,
} from '../domain/apps'
import type { DeploymentsService } from '../domain/deployments'
import { redact, type SiteEnvService } from '../domain/env'
import type { SiteRecords, SiteRunner } from '../domain/sites'
import type { PlansService } from '../domain/plans'
import { OutboundCheck, outboundPolicyOf } from '../drivers/net/outbound'
import { HostNotFoundError, OutboundRefusedError } from '../drivers/net/errors'
import { appControl, type AppControl } from '../drivers/runtime/app-control'
import { phpEnvUnfit, writePhpEnv } from '../drivers/runtime/php-env'
import type { ContainerRuntime } from '../drivers/runtime/types'
import { toCheckedTar } from '../drivers/sources/archive'
import { DeployWorkFolder } from '../drivers/sources/work-tars'
import { InvalidGitSourceError, InvalidSourceError, SourceTooLargeError, TooManyFilesError, UnsafeSourceError } from '../drivers/sources/errors'
import { checkGitRef, checkGitTransport, gitFetchCommand, parseGitUrl, readGitFetch } from '../drivers/sources/git'
import type { Config } from '../config/config'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { SiteRow } from '../store/schema'

export interface Apps {
  deployer: AppDeployer
  supervisor: AppSupervisor
  env: AppEnv
  intake: AppIntake
  starts: AppStarts
  pushes: AppPushes
  views: AppViews
  /** The variables in PHP-FPM's pool (berth/php, and PHP on berth/app), at each start and change. */
  php: PhpEnvs
}

/** What the apps take from the sites area, built before them. */
export interface AppsNeeds {
  config: Config
  clock: Clock
  log: Logger
  runtime: ContainerRuntime
  plans: Pick<PlansService, 'get'>
  sites: Pick<SiteRecords, 'find' | 'setApp' | 'listLive' | 'setWebPort'>
  runner: Pick<SiteRunner, 'run'>
  env: SiteEnvService
  releasesOf(siteId: string, keep: number): string[]
  setBuilt(deploymentId: string, built: { runtime: NonNullable<SiteRow['runtime']>; commit: string | null }): void
  /** The site's deployment `id` (what it built), for the live release followed after a restore. */
  deploymentOf(siteId: string, id: string): { runtime: SiteRow['runtime']; status: string } | undefined
  /** Where an uploaded archive's checked tar waits for its deployment (on the box's data disk). */
  workDir: string
  siteDisk: (slug: string) => ReturnType<ContainerRuntime['siteDisk']>
  ensureRoom: (what: string) => void
  /** The deployments service, made after: the intake and the pushes queue through it. */
  deployments: () => DeploymentsService
}

export function buildApps(n: AppsNeeds): Apps {
  const control = followingTheWeb(appControl(n.runtime), n.sites)
  const supervisor: AppSupervisor = control
  const env: AppEnv = { valuesOf: (siteId) => n.env.valuesOf(siteId), redact: (siteId, text) => redact(text, n.env.secretValuesOf(siteId)) }
  const outbound = new OutboundCheck(outboundPolicyOf(n.config))
  const work = new DeployWorkFolder(n.workDir)
  const sources: AppSources = {
    archiveOf: (id) => work.tarOf(id),
    dropArchive: (id) => work.drop(id),
    async gitFetch(source, dir, secrets) {
      const url = parseGitUrl(source.url)
      const ref = checkGitRef(source.ref ?? 'HEAD')
      const pinned = await outbound.check(url.host)
      const token = source.token_secret ? secrets[source.token_secret] : undefined
      const deployKey = source.ssh_key_secret ? secrets[source.ssh_key_secret] : undefined
      if ((source.token_secret && token === undefined) || (source.ssh_key_secret && deployKey === undefined)) {
        throw new Error(`The secret ${source.token_secret ?? source.ssh_key_secret} is gone (or unreadable on this box); set it again, then deploy.`)
      }
      const scratch = `/tmp/berth-git-${crypto.randomUUID()}`
      const timeoutSeconds = Math.min(n.config.apps.buildTimeoutSeconds, 600)
      const fetch = gitFetchCommand({ url, ref, pinned, dir, scratch, timeoutSeconds, credentials: { ...(token !== undefined ? { token: { value: token } } : {}), ...(deployKey !== undefined ? { deployKey } : {}) } })
      return { ...fetch, scratch, read: (exitCode, output) => readGitFetch(exitCode, output, timeoutSeconds) }
    },
  }
  const appSites = new AppSiteRecords({ sites: n.sites, runner: n.runner, setBuilt: n.setBuilt, clock: n.clock })
  const deployer = new AppDeployer({
    runtime: n.runtime, supervisor, env, sources, log: n.log, sites: appSites,
    buildTimeoutS: n.config.apps.buildTimeoutSeconds, healthTimeoutS: n.config.apps.healthTimeoutSeconds,
    keptReleases: (siteId) => n.releasesOf(siteId, KEPT_RELEASES),
  })
  const intake = new AppIntake({
    toCheckedTar: async (body, format, id, limits) => {
      try {
        return await toCheckedTar(body, format, await work.base(id), limits)
      } catch (err) {
        throw refusalOf(err)
      }
    },
    checkGit: async (url, ref, credentials) => {
      try {
        const parsed = parseGitUrl(url)
        if (ref !== null) checkGitRef(ref)
        checkGitTransport(parsed, await outbound.check(parsed.host), credentials)
      } catch (err) {
        throw refusalOf(err)
      }
    },
    siteDisk: n.siteDisk,
    ensureRoom: n.ensureRoom,
    secretNames: (siteId) => {
      const site = n.sites.find(siteId)
      return site ? n.env.view(site).variables.filter((v) => v.secret).map((v) => v.name) : []
    },
    deploySource: (site, source, id) => n.deployments().deploySource(site, source, id),
  })
  const pushes = new AppPushes({
    sites: n.sites,
    hasSsh: (site) => n.plans.get(site.planSlug).features.ssh,
    watch: (slug, onPush) => control.watch(slug, (e) => {
      if (e.event === 'push') onPush(e)
    }),
    deploy: (site: SiteRow, source: DeploySource) => n.deployments().deploySource(site, source),
    refuse: (slug, id, message) => control.pushDone(slug, id, false, message),
    useAppImage: (site) => appSites.useAppImage(site),
    unfinished: (site) => n.deployments().unfinished(site),
    log: n.log,
  })
  // A change of the settings restarts the app's processes with them, without dropping a request.
  n.env.onChanged(async (site) => {
    if (site.runtime !== null && site.status === 'active') await control.pushEnv(site.slug, env.valuesOf(site.id))
  })
  // PHP-FPM's pool gets them too (berth/php on vps and dedicated plans, PHP on the app image).
  const runsPhp = (site: SiteRow) => site.runtime !== null || n.plans.get(site.planSlug).hosting_type !== 'shared'
  const php = new PhpEnvs({
    sites: n.sites, env, log: n.log, runsPhp,
    write: (slug, values) => writePhpEnv(n.runtime, slug, values),
  })
  n.env.onChanged((site) => php.changed(site))
  // The env view names what PHP cannot be given (its warning), on a site whose PHP serves: a vps
  // site's image, or an app whose live release is PHP (a Node app's container has PHP-FPM idle).
  const servesPhp = (site: SiteRow) => (site.runtime === null ? runsPhp(site) : site.runtime === 'php')
  n.env.explainLeftOut((site, values) => (servesPhp(site) ? Object.entries(values).flatMap(([name, value]) => {
    const why = phpEnvUnfit(value)
    return why ? [{ name, why }] : []
  }) : []))
  return {
    deployer, supervisor, env, intake, pushes, php,
    starts: new AppStarts({
      sites: n.sites, supervisor, env, log: n.log,
      live: { find: (siteId, id) => n.deploymentOf(siteId, id), set: (siteId, id, runtime) => void n.sites.setApp(siteId, { runtime, live: id }, n.clock.now()) },
    }),
    views: new AppViews({ supervisor, clock: n.clock, hasSsh: (site) => n.plans.get(site.planSlug).features.ssh }),
  }
}

/**
 * The supervisor's verbs as Berth uses them: a switch or a settings push that moved the live web
 * process to another port (or started it) stores that port at once, which the edge's directory
 * sees on its next request (it connects there directly on this box), then tells the supervisor to
 * retire the old web, which it stops once no connection to it is open (docs/architecture.md "Apps").
 */
function followingTheWeb(control: AppControl, sites: Pick<SiteRecords, 'setWebPort'>): AppControl {
  const moved = (slug: string, port: number | null) => {
    sites.setWebPort(slug, port)
    void control.retire(slug).catch(() => {})
  }
  return {
    ...control,
    async switchRelease(slug, releaseDir, timeoutS) {
      const switched = await control.switchRelease(slug, releaseDir, timeoutS)
      if (switched.ok) moved(slug, switched.port ?? null)
      return switched
    },
    async pushEnv(slug, env) {
      const pushed = await control.pushEnv(slug, env)
      moved(slug, pushed.port)
      return pushed
    },
  }
}

/** The drivers' refusals of a source, as the apps area words them for the API. */
function refusalOf(err: unknown): unknown {
  const as = (refusal: SourceRefusal, message: string) => new SourceRefusedError(refusal, message)
  if (err instanceof UnsafeSourceError) return as('unsafe', err.message)
  if (err instanceof SourceTooLargeError) return as('too_large', err.message)
  if (err instanceof TooManyFilesError) return as('too_many_files', err.message)
  if (err instanceof InvalidSourceError) return as('unreadable', err.message)
  if (err instanceof InvalidGitSourceError) return as(err.param === 'source.ref' ? 'bad_ref' : 'bad_url', err.message)
  if (err instanceof OutboundRefusedError) return as('blocked_address', err.message)
  if (err instanceof HostNotFoundError) return as('bad_url', err.message)
  return err
}
