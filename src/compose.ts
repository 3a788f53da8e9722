import { join } from 'node:path'
import { AccountsRepository } from './api/accounts/repository'
import { AuthService } from './api/auth/service'
import { ClientAddress } from './api/http/client-address'
import { KeysRepository } from './api/keys/repository'
import { KeysService } from './api/keys/service'
import { PlansRepository } from './api/plans/repository'
import { PlansService } from './api/plans/service'
import { RateLimiter } from './api/rate-limits/service'
import type { StatusInfo } from './api/status/routes'
import { BillingRepository } from './api/billing/repository'
import { BillingService } from './api/billing/service'
import { CheckoutRepository } from './api/checkout/repository'
import { CheckoutService } from './api/checkout/service'
import { SiteDirectory } from './api/sites/directory'
import { SiteEndpoints } from './api/sites/endpoints'
import { Provisioner } from './api/sites/provisioning'
import { SitesRepository } from './api/sites/repository'
import { PROVISION_JOB, SitesService } from './api/sites/service'
import { SiteLifecycle } from './api/sites/lifecycle'
import { SiteReaper, type SiteDataPurger } from './api/sites/reaper'
import { ArchivesRepository } from './api/archives/repository'
import { ArchiveRetention } from './api/archives/retention'
import { CREATE_ARCHIVE_JOB, CreateArchiveJob, RESTORE_ARCHIVE_JOB, RestoreArchiveJob, type ArchiveJobDeps } from './api/archives/jobs'
import { RestoreGuard } from './api/archives/restore-guard'
import { ArchivesService } from './api/archives/service'
import { LocalArchiveStore } from './drivers/archives/local'
import { LocalProcessor } from './drivers/payments/local'
import { DockerRuntime } from './drivers/runtime/docker'
import type { ContainerRuntime } from './drivers/runtime/types'
import { JobRunner } from './jobs/runner'
import { ModulesService } from './api/modules/service'
import { ClaimsRepository } from './api/claims/repository'
import { ClaimsService } from './api/claims/service'
import { SshService } from './api/ssh/service'
import { recordOnlyModules } from './modules/catalog'
import { Reconciler } from './reconcile/reconciler'
import { EdgeMetrics } from './edge/metrics'
import { Deployer } from './api/deployments/deployer'
import { DeploymentsRepository } from './api/deployments/repository'
import { DEPLOY_JOB, DeploymentsService } from './api/deployments/service'
import { LogsService } from './api/logs/service'
import { FilesService } from './api/files/service'
import { MetricsRepository } from './api/metrics/repository'
import { SiteMetricsService } from './api/metrics/service'
import { eq } from 'drizzle-orm'
import { settings } from './store/schema'
import type { Config } from './config/config'
import { shiftedClock, type Clock } from './lib/clock'
import { createLogger, type Logger } from './lib/logger'
import { migrate } from './store/migrate'
import { openStore, type Store } from './store/store'
import { VERSION } from './version'

/** Everything the API and the CLI work with, built once from the config. */
export interface Services {
  config: Config
  clock: Clock
  log: Logger
  store: Store
  plans: PlansService
  keys: KeysService
  auth: AuthService
  limiter: RateLimiter
  clients: ClientAddress
  status: StatusInfo
  /** Random id of this installation, in the names and labels of its containers. */
  instanceId: string
  processor: LocalProcessor
  runtime: ContainerRuntime
  jobs: JobRunner
  sites: SitesService
  modules: ModulesService
  claims: ClaimsService
  ssh: SshService
  /** Scale, delete and restore of sites. */
  lifecycle: SiteLifecycle
  /** Removes sites whose deletion grace period has ended; run by each reconcile pass. */
  reaper: SiteReaper
  /** Snapshots and daily backups of sites' files. */
  archives: ArchivesService
  checkout: CheckoutService
  directory: SiteDirectory
  reconciler: Reconciler
  /** Requests, bytes and latency per site, counted by the edge proxy. */
  metrics: EdgeMetrics
  /** Site logs, read from the volumes. */
  logs: LogsService
  /** The files API: sites' home folders, from the host. */
  files: FilesService
  deployments: DeploymentsService
  /** Stored edge counts per site and day, and the containers' current resource use. */
  siteMetrics: SiteMetricsService
}

export const databasePath = (config: Config) => join(config.server.dataDir, 'berth.db')

/**
 * The composition root: opens (and migrates) the store, seeds the catalog on first start, and
 * wires repositories, drivers and services. Tests call it with their own config, clock and logger.
 */
export function buildServices(config: Config, opts: { clock?: Clock; log?: Logger; store?: Store; runtime?: ContainerRuntime } = {}): Services {
  const clock = opts.clock ?? shiftedClock(config.dev.clockOffsetSeconds * 1000)
  const log = opts.log ?? createLogger(config.server.logLevel)
  if (!opts.clock && config.dev.clockOffsetSeconds !== 0) log.warn('the clock is shifted for a test (dev.clock_offset_seconds); never run a real business like this', { offset_seconds: config.dev.clockOffsetSeconds })
  const store = opts.store ?? openStore(databasePath(config))
  migrate(store)
  const plansRepo = new PlansRepository(store, clock)
  if (plansRepo.seedOnce(config.plans)) log.info('seeded the plan catalog', { plans: config.plans.map((p) => p.slug) })
  const keysRepo = new KeysRepository(store)
  const keys = new KeysService(keysRepo, store, clock, config.brand.prefix)
  const instanceId = instanceIdOf(store)
  const runtime = opts.runtime ?? new DockerRuntime({ socketPath: config.containers.dockerSocket, instanceId, subnetPool: config.containers.subnetPool, pidsLimit: config.containers.pidsLimit, sshListenAddress: config.ssh.listenAddress, log })
  const plans = new PlansService(plansRepo, store, config.brand.prefix)
  const accounts = new AccountsRepository(store)
  const sitesRepo = new SitesRepository(store, {
    planHasSsh: (slug) => plans.get(slug).features.ssh,
    range: config.ssh.portRange,
    isFree: (port) => hostPortFree(config.ssh.listenAddress, port),
  })
  const checkoutRepo = new CheckoutRepository(store)
  const billingRepo = new BillingRepository(store)
  const endpoints = new SiteEndpoints()
  let checkout: CheckoutService | undefined
  const processor = new LocalProcessor(config.server.siteUrl, (ref) => checkout!.hostedSession(ref), () => clock.now())
  const billing = new BillingService(billingRepo, checkoutRepo, processor, clock, log)
  const provisioner = new Provisioner(sitesRepo, plans, runtime, endpoints, config, clock, log, (site, error) => billing.refundPurchaseOf(site, error))
  const deploymentsRepo = new DeploymentsRepository(store)
  const deployer = new Deployer(deploymentsRepo, sitesRepo, plans, runtime, clock, log)
  const archivesRepo = new ArchivesRepository(store)
  const archiveFiles = new LocalArchiveStore(config.archives.dir)
  const retention = new ArchiveRetention(archivesRepo, archiveFiles, log)
  const restores = new RestoreGuard(archivesRepo)
  const archiveWork: ArchiveJobDeps = { repo: archivesRepo, retention, restores, files: archiveFiles, runtime, sites: sitesRepo, plans, endpoints, config, clock, log, workDir: join(config.archives.dir, '.work') }
  const jobs = new JobRunner(store, clock, log, {
    [PROVISION_JOB]: provisioner,
    [DEPLOY_JOB]: deployer,
    [CREATE_ARCHIVE_JOB]: new CreateArchiveJob(archiveWork),
    [RESTORE_ARCHIVE_JOB]: new RestoreArchiveJob(archiveWork),
  })
  const sites = new SitesService(store, clock, sitesRepo, checkoutRepo, billingRepo, plans, jobs, config, runtime, log)
  checkout = new CheckoutService(store, clock, log, config, checkoutRepo, plans, processor, accounts, keys, billingRepo, sites, jobs)
  const archives = new ArchivesService(store, clock, archivesRepo, retention, sites, sitesRepo, plans, jobs, config, archiveWork.workDir, log)
  const lifecycle = new SiteLifecycle(store, clock, sitesRepo, sites, billingRepo, plans, runtime, endpoints, config, log)
  // What else a reaped site owns, removed after its container and volume: its snapshots and
  // backups (rows and stored files); DNS records later likewise.
  const purgers: SiteDataPurger[] = [archives]
  const reaper = new SiteReaper(store, clock, sitesRepo, keysRepo, billingRepo, runtime, endpoints, purgers, log)
  const edgeMetrics = new EdgeMetrics()
  return {
    config,
    clock,
    log,
    store,
    plans,
    keys,
    auth: new AuthService(store, clock, accounts, keys),
    limiter: new RateLimiter(store, clock, config.rateLimits),
    clients: new ClientAddress(config.server.trustedProxies),
    status: {
      region: config.server.region,
      provider: config.server.provider,
      version: VERSION,
      processor: processor.name,
      testMode: processor.testMode,
    },
    instanceId,
    processor,
    runtime,
    jobs,
    sites,
    modules: new ModulesService(store, clock, log, sites, plans, recordOnlyModules()),
    ssh: new SshService(config, sites, plans, runtime),
    claims: new ClaimsService(store, clock, log, new ClaimsRepository(store), sitesRepo, keys, runtime, config.brand.prefix),
    lifecycle,
    reaper,
    archives,
    checkout,
    directory: new SiteDirectory(store, sitesRepo, endpoints, runtime),
    reconciler: new Reconciler(sitesRepo, plans, runtime, endpoints, jobs, config, clock, log, reaper),
    metrics: edgeMetrics,
    logs: new LogsService(sites, plans, runtime),
    files: new FilesService(sites, runtime, restores),
    deployments: new DeploymentsService(store, clock, deploymentsRepo, sites, jobs),
    siteMetrics: new SiteMetricsService(clock, new MetricsRepository(store), edgeMetrics, sites, runtime, log),
  }
}

/**
 * True when nothing listens on the host port: a probe bind, closed at once. Docker's userland
 * proxy binds every published port, so ports of other engines' users show as taken too.
 */
function hostPortFree(address: string, port: number): boolean {
  try {
    Bun.listen({ hostname: address, port, socket: { data() {} } }).stop(true)
    return true
  } catch {
    return false
  }
}

/** The installation's random id, created on first start and kept in the store. */
function instanceIdOf(store: Store): string {
  return store.write(() => {
    const row = store.db.select().from(settings).where(eq(settings.key, 'instance_id')).get()
    if (row) return row.value
    const id = Buffer.from(crypto.getRandomValues(new Uint8Array(4))).toString('hex')
    store.db.insert(settings).values({ key: 'instance_id', value: id }).run()
    return id
  })
}

/**
 * Periodic upkeep (every 30 s and on stop): flush key last-used times, prune rate-limit hits,
 * expire unpaid checkouts, store the edge's traffic counts; queue due site backups and finish
 * archive removals (in the background: `maintain` never throws).
 */
export function runMaintenance(s: Services): void {
  s.keys.flushLastUsed()
  s.limiter.prune()
  s.checkout.expireOld()
  s.siteMetrics.persist()
  void s.archives.maintain()
}
