/** Sites: their containers, files, deployments, archives, logs and metrics, and the edge's view of them. */
import { waitForAnswer } from '../drivers/runtime/first-answer'
import { SITE_PORT } from '../drivers/runtime/site-container'
import { LocalWorkFolder } from '../drivers/archives/work-folder'
import { localHomes, type HomeDrivers } from '../drivers/files/home-drivers'
import { join } from 'node:path'
import { ArchiveDumps, ArchiveEvents, BackupEvents, type ArchiveJobDeps, ArchiveRetention, ArchivesService, CREATE_ARCHIVE_JOB, CreateArchiveJob, RESTORE_ARCHIVE_JOB, RestoreArchiveJob, RestoreGuard } from '../domain/archives'
import type { BillingService, SubscriptionBilling } from '../domain/billing'
import type { BerthNames } from '../domain/berth-names'
import { DEPLOY_JOB, Deployer, DeploymentEvents, DeploymentFiles, DeploymentsService, makeDeploymentsRepository } from '../domain/deployments'
import { FilesService } from '../domain/files'
import { AppCrashWatch, inAppEnv } from '../domain/apps'
import { buildApps, type Apps } from './apps'
import { buildDatabases } from './databases'
import { DatabaseLife, DatabaseSizes, type DatabaseArchives, type DatabasesService } from '../domain/databases'
import { tarDumps } from '../drivers/archives/db-dumps'
import { EdgeAccessLog, edgeWritesAccessLog, LogRotation, LogsService } from '../domain/logs'
import { makeMetricsRepository, SiteMetricsService } from '../domain/metrics'
import type { ModulesService } from '../domain/modules'
import { APPLY_JOBS, ApplySiteJob, PROVISION_JOB, Provisioner, Reconciler, RepairBackoff, SiteAvailability, type SiteDataPurger, SiteDirectory, SiteEvents, SiteGuard, SiteHealer, SiteLifecycle, SiteReaper, SiteRunner, SiteDiskCache, SitesService, type SitesServiceDeps } from '../domain/sites'
import { SiteFirewallKeeper } from '../drivers/firewall/keeper'
import { makeMarkedMoves, MOVE_SITE_JOB, MoveMarkHandler } from '../domain/cluster'
import type { Placement } from '../drivers/cluster/types'
import type { SiteRow } from '../store/schema'
import { selectFirewall } from '../drivers/firewall/select'
import type { SiteFirewall } from '../drivers/firewall/types'
import { EdgeMetrics } from '../edge/metrics'
import { AuditLog, makeAuditRepository } from '../domain/audit'
import { ExecService } from '../domain/exec'
import { makeSiteEnvRepository, SiteEnvService } from '../domain/env'
import { BoxKeyFile } from '../drivers/secrets/box-key'
import type { SecretBox } from '../drivers/secrets/types'
import { secretsKeyPath } from './installation'
import type { CoreReads } from './core'
import type { ClusterCore } from './cluster'

export interface Sites {
  /** The box key (DATA_DIR/secrets.key) the settings' secrets, the databases' passwords and the webhooks' secrets are sealed with. */
  box: SecretBox
  /** Brings sites' containers in line with the store; knows where each running site answers. */
  runner: SiteRunner
  /** The sites' disks as their filesystems report them, reused briefly (the site view, metrics, scale). */
  disks: SiteDiskCache
  /** Resolves the caller's site of a request (404 for another's, 409 when it cannot change). */
  guard: SiteGuard
  sites: SitesService
  /** Removes sites whose deletion grace period has ended; run by each reconcile pass. */
  reaper: SiteReaper
  /** Snapshots and daily backups of sites' files. */
  archives: ArchivesService
  /** Where the edge sends a site's requests. */
  directory: SiteDirectory
  reconciler: Reconciler
  /** Keeps the host firewall rules that keep sites off the host and link-local addresses (at start and each reconcile pass). */
  firewall: SiteFirewallKeeper
  /** Brings an active site's container back as soon as the engine reports it gone. */
  healer: SiteHealer
  /** site.down and site.up of an active site, by slug: the nodes' health monitor tells of a node's outage with them (domain/cluster/health.ts). */
  outages: { down(slug: string, reason: string): void; up(slug: string): void; active(slug: string): boolean }
  /** Asks the app sites' supervisors for crash loops (app.crashing, app.recovered); run by berth serve's upkeep. */
  appCrashes: AppCrashWatch
  /** Requests, bytes and latency per site, counted by the edge proxy. */
  metrics: EdgeMetrics
  /** The access log the edge writes for sites whose web server cannot log the request target. */
  accessLog: EdgeAccessLog
  /** Site logs, read from the volumes. */
  logs: LogsService
  /** Rotates every site's logs by size (run every logs.rotate_interval_seconds by berth serve). */
  logRotation: LogRotation
  /** The files API: sites' home folders, from the host. */
  files: FilesService
  deployments: DeploymentsService
  /** Apps (issue 39): sources built into releases, the app image's supervisor, pushes, the settings handed to containers. */
  apps: Apps
  /** Stored edge counts per site and day, and the containers' current resource use. */
  siteMetrics: SiteMetricsService
  /** An archive turned ready or is being removed (the copies off the box follow). */
  archiveEvents: ArchiveEvents
  /** Every exec, console session and admin shell run in a site (domain/audit): recorded, read as `logs?type=audit`, pruned by maintenance. */
  audit: AuditLog
  /** The exec API: one command in a site's container, as the site user. */
  exec: ExecService
  /**
   * A site's settings and secrets (secrets sealed with the box key, DATA_DIR/secrets.key). Its
   * `onChanged` is where the app's restart with the new values is wired; none yet.
   */
  env: SiteEnvService
  /** The sites' managed databases (issue 40): their servers, limits, passwords and the URLs they give the app. */
  databases: DatabasesService
  /** The databases' life with their sites (suspension, resumption, scale, the engine's events, reconcile). */
  databaseLife: DatabaseLife
  /** The databases' sizes, measured cheaply and reused a few seconds (views, /metrics). */
  databaseSizes: DatabaseSizes
  /** A database restored alone from an archive, or brought back from its deletion grace. */
  databaseArchives: DatabaseArchives
  /** The databases' dumps in archives (`berth restore` rebuilds the databases from them). */
  archiveDumps: ArchiveDumps
  /** The archive jobs themselves, for work that runs one and waits for it (a move between nodes, an evacuation). */
  archiveJobs: { create: CreateArchiveJob; restore: RestoreArchiveJob }
}

/** What the sites area takes from the others. */
export interface SitesNeeds {
  /** A site that could not be set up has its purchase refunded. */
  purchases: Pick<BillingService, 'refundPurchaseOf'>
  names: {
    ofSites: SitesServiceDeps['names']
    linkedDomains(): { name: string; siteId: string }[]
    berthNames: Pick<BerthNames, 'slugProblem'>
    /** A reaped site's DNS records go with it. */
    dns: SiteDataPurger
  }
  modules: Pick<ModulesService, 'edgeFlags'>
  /** What else a reaped site owns besides its rows, containers, archives and records (the modules' data). */
  purgers: SiteDataPurger[]
  /** null: no host firewall (tests); undefined: the one the config selects. */
  firewall: SiteFirewall | null | undefined
  /**
   * The drivers of the sites' homes: folders on this box (localHomes) when absent; in a cluster
   * (cluster.enabled) drivers/cluster/node-homes.ts's, which reach a home on a node through its agent.
   */
  homes?: HomeDrivers
  /** In a cluster: the sites whose node is down, shown `recovering` (compose/cluster-ops.ts). */
  recovering?: { recovering(): ReadonlySet<string>; version(): number }
}

/** Sites and their jobs (provisioning, scale and restore, deploys, archives). */
export function buildSites(
  core: CoreReads<'config' | 'store' | 'clock' | 'log' | 'plans' | 'jobs' | 'runtime' | 'databaseRuntime' | 'changes' | 'archiveStore' | 'placement' | 'room' | 'events', 'archives' | 'sites' | 'checkout' | 'billing' | 'keys' | 'offsite'> & { cluster: Pick<ClusterCore, 'liveNodes'> | null },
  needs: SitesNeeds,
): Sites {
  const { config, store, clock, log, plans, jobs, runtime, changes, repos, archiveStore: archiveFiles, room, events } = core
  const homes = needs.homes ?? localHomes
  const archivesRepo = repos.archives
  const deploymentsRepo = makeDeploymentsRepository(store)
  // A restore brings its site back itself: the runner's repairs (healer, reconcile) leave it alone.
  // A site's databases start with it and stop with it (DatabaseLife, made below with the databases).
  let databaseLife: DatabaseLife | undefined
  const companions = {
    started: (site: SiteRow) => databaseLife?.startFor(site) ?? Promise.resolve(),
    stopped: async (slug: string) => {
      const site = repos.sites.findLiveBySlug(slug)
      if (site && databaseLife) await databaseLife.stopFor(site)
    },
  }
  const runner = new SiteRunner({ sites: repos.sites, plans, runtime, containers: config.containers, log, waitForAnswer, restoring: (siteId) => repos.archives.restoringOf(siteId) !== undefined, companions })
  const archiveEvents = new ArchiveEvents()
  const retention = new ArchiveRetention(archivesRepo, archiveFiles, log, archiveEvents)
  const restores = new RestoreGuard(archivesRepo)
  const work = new LocalWorkFolder(join(config.archives.dir, '.work'))
  // The databases' dumps go into every archive, beside the home's files (told of the databases once they are built).
  const dumps = new ArchiveDumps({ files: tarDumps, work, clock, log })
  const archiveWork: ArchiveJobDeps = { repo: archivesRepo, retention, restores, files: archiveFiles, runtime, runner, sites: repos.sites, backupsKept: config.archives.backupsKept, clock, log, tar: homes.tar, work, changes, events: archiveEvents, dumps }
  const archiveJobs = { create: new CreateArchiveJob(archiveWork), restore: new RestoreArchiveJob(archiveWork) }
  const disks = new SiteDiskCache(runtime, clock)
  const applySite = new ApplySiteJob({ sites: repos.sites, runner, log, disks: { runtime, plans } })
  const box = new BoxKeyFile(secretsKeyPath(config))
  const env = new SiteEnvService({ store, repo: makeSiteEnvRepository(store), box, clock, log })
  let deployments: DeploymentsService | undefined
  const apps = buildApps({
    config, clock, log, runtime, plans, sites: repos.sites, runner, env, workDir: join(config.server.dataDir, 'deploy-work'),
    releasesOf: (siteId, keep) => deploymentsRepo.releasesOf(siteId, keep), setBuilt: (id, built) => deploymentsRepo.setBuilt(id, built),
    deploymentOf: (siteId, id) => deploymentsRepo.findForSite(siteId, id),
    siteDisk: (slug) => disks.get(slug), ensureRoom: (what) => room.ensureRoom(what), deployments: () => deployments!,
  })
  jobs.register({
    [PROVISION_JOB]: new Provisioner({ sites: repos.sites, runner, clock, log, onFailed: (site, error) => needs.purchases.refundPurchaseOf(site, error) }),
    [APPLY_JOBS.scale]: applySite,
    [APPLY_JOBS.restore]: applySite,
    [DEPLOY_JOB]: new Deployer(deploymentsRepo, repos.sites, plans, runtime, clock, log, homes.entryExists, changes, new DeploymentFiles({
      archives: archivesRepo, deployments: deploymentsRepo, retention, files: archiveFiles, runtime, restores, runner, sites: repos.sites, tar: homes.tar, work: archiveWork.work,
      clock, log, events: archiveEvents, kept: config.archives.deploymentsKept,
    }), { deployer: apps.deployer, supervisor: apps.supervisor, env: apps.env }),
    [CREATE_ARCHIVE_JOB]: archiveJobs.create,
    [RESTORE_ARCHIVE_JOB]: archiveJobs.restore,
    // A move's mark, left running by a berth serve that died (its restore, MOVE_RESTORE_JOB, finishes the site).
    [MOVE_SITE_JOB]: new MoveMarkHandler(),
  })
  // A site being switched to another node: the edge answers its 503 page.
  const moves = makeMarkedMoves(store)
  // With a placement (a cluster), the reconcile pass backs off a node that keeps failing a site.
  const placement = core.placement
  const repairs = placement ? new RepairBackoff() : undefined
  const sites = new SitesService({
    store, clock, sites: repos.sites, checkouts: repos.checkout, billing: repos.billing, plans, jobs, runner, room,
    siteUrl: config.server.siteUrl, sitesDomain: config.sites.domain, berthNames: needs.names.berthNames, names: needs.names.ofSites,
    recovering: new SiteAvailability({ nodeDown: needs.recovering, moving: moves, runner, repairs }),
    disks, app: (site) => apps.views.view(site), databases: (site) => databases.summaryOf(site),
  })
  // The event log (issue 41): each status change of a site, each deployment's end, each backup
  // made or failed, recorded in the change's own transaction.
  const siteEvents = new SiteEvents({ events, view: (site) => sites.view(site) }).watch(repos.sites)
  new DeploymentEvents({ events, sites: repos.sites, repo: deploymentsRepo }).watch()
  new BackupEvents({ events, sites: repos.sites, repo: archivesRepo }).watch()
  deployments = new DeploymentsService({ store, clock, repo: deploymentsRepo, jobs, archives: archivesRepo })
  const archives = new ArchivesService({ store, clock, repo: archivesRepo, retention, sites: repos.sites, plans, jobs, config: config.archives, work: archiveWork.work, log, copies: repos.offsite, room })
  const audit = new AuditLog(makeAuditRepository(store), clock, log)
  const databaseSizes = new DatabaseSizes(core.databaseRuntime, clock)
  const { databases, life, archives: databaseArchives } = buildDatabases({ store, clock, log, plans, sites: repos.sites, runtime: core.databaseRuntime, box, audit, env, sizes: databaseSizes, runs: runner, events }, { dumps, archives: archivesRepo, files: archiveFiles, tar: homes.tar, work: new LocalWorkFolder(join(config.archives.dir, '.work-databases')), dumpFiles: tarDumps })
  databaseLife = life
  // What else a reaped site owns, removed after its container and volume: its snapshots and
  // backups (rows and stored files), its DNS records, its audit trail, its databases (servers, data, rows), its variables, and what the modules keep of it.
  const reaper = new SiteReaper({ store, clock, sites: repos.sites, keys: repos.keys, billing: repos.billing, runner, purgers: [archives, needs.names.dns, audit, databases, env, ...needs.purgers], log })
  const metrics = new EdgeMetrics()
  const accessLog = new EdgeAccessLog(runtime, log, homes.openHome)
  const logs = new LogsService(plans, runtime, homes.openHome, accessLog, audit, config.logs.rotateKeep, apps.env.redact)
  // In a cluster the rules follow the nodes: their addresses blocked, their agent ports closed.
  const hostFirewall = needs.firewall === undefined ? selectFirewall(config, core.cluster?.liveNodes) : needs.firewall
  const firewall = new SiteFirewallKeeper({ firewall: hostFirewall, log })
  // Each site network the engine makes puts its rules on top of FORWARD: the firewall's backstop
  // goes back above them at once.
  if (hostFirewall) runtime.onNetworkCreated?.(() => void firewall.keep())
  return {
    box,
    runner,
    disks,
    guard: new SiteGuard(repos.sites),
    sites,
    reaper,
    archives,
    directory: new SiteDirectory({
      store, sites: repos.sites, runner, domains: { linked: () => needs.names.linkedDomains() }, modules: (site) => needs.modules.edgeFlags(site),
      edgeLogs: (site) => edgeWritesAccessLog(plans.get(site.planSlug).hosting_type, site.runtime), moving: () => moves.slugs(), frontPort: SITE_PORT,
    }),
    reconciler: new Reconciler({ sites: repos.sites, runner, runtime, jobs, reaper, log, backoff: repairs, nodeOf: placement ? (slug) => placement.nodeOf(slug) : undefined, now: () => clock.now(), companions: databaseLife }),
    firewall,
    healer: new SiteHealer({ sites: repos.sites, runner, log, events: siteEvents }),
    outages: siteEvents.bySlug(repos.sites),
    appCrashes: new AppCrashWatch({ store, sites: repos.sites, supervisor: apps.supervisor, events, site: siteEvents, log }),
    metrics,
    accessLog,
    logs,
    logRotation: new LogRotation({ sites: repos.sites, runtime, openHome: homes.openHome, log, rotateBytes: config.logs.rotateBytes, keep: config.logs.rotateKeep, onRotated: (slug) => logs.rotatedLogs(slug) }),
    files: new FilesService(runtime, restores, homes.openHome, undefined, changes),
    deployments,
    apps,
    siteMetrics: new SiteMetricsService(clock, makeMetricsRepository(store), metrics, runtime, log, homes.measureDisk, disks),
    archiveEvents,
    audit,
    exec: new ExecService(runtime, homes.openHome, audit, undefined, { env: (siteId) => env.valuesOf(siteId), argv: inAppEnv }),
    env,
    databases,
    databaseLife,
    databaseSizes,
    databaseArchives,
    archiveDumps: dumps,
    archiveJobs,
  }
}

/** Scale, delete and restore of sites: made once money is, since a plan change is prorated. */
export function buildLifecycle(core: CoreReads<'store' | 'clock' | 'log' | 'plans' | 'jobs', 'sites' | 'billing'>, sites: { runner: SiteRunner; sites: SitesService; disks: SiteDiskCache; databaseLife?: DatabaseLife }, subscriptions: SubscriptionBilling): SiteLifecycle {
  const { store, clock, log, plans, jobs, repos } = core
  const life = sites.databaseLife
  return new SiteLifecycle({
    store, clock, sites: repos.sites, views: sites.sites, billing: repos.billing, money: subscriptions, plans, jobs, runner: sites.runner, log, disks: sites.disks,
    databasesFit: life ? (site, plan) => life.requireFits(site, plan) : undefined,
  })
}
