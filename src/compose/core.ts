/** What every area is built on: the clock, the log, the store with the shared repositories, Docker, the jobs. */
import { hostPortFree } from '../lib/ports'
import type { Resolver } from '../drivers/net/outbound'
import { makeAccountsRepository } from '../domain/accounts'
import { makeArchivesRepository } from '../domain/archives'
import { makeBillingRepository } from '../domain/billing'
import { makeCheckoutRepository } from '../domain/checkout'
import { makeDomainsRepository } from '../domain/domains'
import { KeysService, makeKeysRepository } from '../domain/keys'
import { makeOffsiteCopiesRepository } from '../domain/offsite'
import { makePlansRepository, PlansService } from '../domain/plans'
import { makeSitesRepository, SiteChanges } from '../domain/sites'
import { BoxRoom, sitesDiskGbOf } from '../domain/room'
import { diskSpaceOf } from '../drivers/host/disk-space'
import { LocalArchiveStore } from '../drivers/archives/local'
import type { ArchiveStore } from '../drivers/archives/types'
import { DockerRuntime } from '../drivers/runtime/docker'
import type { DatabaseRuntime } from '../domain/databases'
import { localDatabaseRuntime } from '../drivers/databases/local'
import { DockerDatabaseRuntime } from '../drivers/databases/runtime'
import type { Placement } from '../drivers/cluster/types'
import type { ContainerRuntime } from '../drivers/runtime/types'
import type { SiteFirewall } from '../drivers/firewall/types'
import { JobRunner } from '../jobs/runner'
import type { Config } from '../config/config'
import { shiftedClock, type Clock } from '../lib/clock'
import { createLogger, type Logger } from '../lib/logger'
import { migrate } from '../store/migrate'
import { openStore, type Store } from '../store/store'
import { EventFeed, EventLog } from '../domain/events'
import { databasePath, instanceIdOf } from './installation'
import { buildClusterCore, type ClusterCore } from './cluster'
import type { ClusterPki } from '../drivers/cluster/pki'
import { helperImagesOf } from '../drivers/runtime/site-disks'

/** What a test (or a tool) puts in place of the real thing. */
export interface BuildOptions {
  clock?: Clock
  log?: Logger
  store?: Store
  runtime?: ContainerRuntime
  /** With a test's own runtime: its placement across nodes, when it has one (a cluster's double). */
  placement?: Placement
  /** null: no host firewall (tests); absent: the one the config selects. */
  firewall?: SiteFirewall | null
  /** In a cluster: the sites whose node is down, shown `recovering` (compose/cluster-ops.ts, lateRecovering). */
  recovering?: { recovering(): ReadonlySet<string>; version(): number }
  /** The sites' database servers (issue 40, domain/databases/ports.ts); absent: the engine's own. */
  databaseRuntime?: DatabaseRuntime
  /** `berth serve` in a cluster: the PKI it opened (compose/cluster.ts prepareControlPlane), for the join's route. */
  clusterPki?: ClusterPki | null
  /** Tests' own DNS for the outbound check (drivers/net/outbound.ts Resolver): a name that answers loopback, or changes its answer. */
  resolver?: Resolver
  /** Tests' own webhook timeout (drivers/webhooks/http.ts WEBHOOK_TIMEOUT_MS, 15 s): a receiver that never answers, without a 15 s wait. */
  webhookTimeoutMs?: number
}

/**
 * The repositories more than one area (or an admin's operation) reads, each made once; an area's
 * own repositories are made in its file. `sites` has the SSH-port policy wherever it is used.
 */
export interface SharedRepositories {
  sites: ReturnType<typeof makeSitesRepository>
  /** The archives' rows: the archive jobs, a move's transfer, the restore's return, the cluster's start check. */
  archives: ReturnType<typeof makeArchivesRepository>
  keys: ReturnType<typeof makeKeysRepository>
  accounts: ReturnType<typeof makeAccountsRepository>
  checkout: ReturnType<typeof makeCheckoutRepository>
  billing: ReturnType<typeof makeBillingRepository>
  domains: ReturnType<typeof makeDomainsRepository>
  /** The copies off the box: written by the copier (compose/offsite.ts), read by the archives' views. */
  offsite: ReturnType<typeof makeOffsiteCopiesRepository>
}

export interface Core {
  config: Config
  clock: Clock
  log: Logger
  store: Store
  /** Random id of this installation, in the names and labels of its containers. */
  instanceId: string
  runtime: ContainerRuntime
  /** The sites' database servers, each a container on its site's network (issue 40). */
  databaseRuntime: DatabaseRuntime
  /** Which node each site runs on: the cluster runtime's (ClusterRuntime.placement); null on a single box. */
  placement: Placement | null
  /** With cluster.enabled: the nodes, the link to their agents and the Swarm runtime (which is `runtime`). */
  cluster: ClusterCore | null
  /** The background jobs; each area registers its kinds (`JobRunner.register`). */
  jobs: JobRunner
  plans: PlansService
  keys: KeysService
  /** A site's files changed (a deploy, the files API, a restore): derived data follows. */
  changes: SiteChanges
  repos: SharedRepositories
  /** The archives' bytes under archives.dir: the archive jobs, the off-box copier, a move's fetch-back, the restore. */
  archiveStore: ArchiveStore
  /** The data folder's free space against the reserve Berth keeps (disk.*): refuses growth under it, shown by status and /metrics. */
  room: BoxRoom
  /** The event log (issue 41): every area records its state changes here, in the change's transaction; the webhooks hook in. */
  events: EventLog
  /** The log as agents read it (GET /events/, MCP). */
  eventFeed: EventFeed
}

/**
 * What an area's builder reads of the core: the members it names, and of the shared
 * repositories the ones it names (an area's builder never takes the whole core).
 */
export type CoreReads<K extends Exclude<keyof Core, 'repos'>, R extends keyof SharedRepositories = never> = Pick<Core, K> & { repos: Pick<SharedRepositories, R> }

/**
 * Opens (and migrates) the store, seeds the plan catalog on first start, and makes the
 * repositories and drivers every area shares.
 */
export function buildCore(config: Config, opts: BuildOptions): Core {
  const clock = opts.clock ?? shiftedClock(config.dev.clockOffsetSeconds * 1000)
  const log = opts.log ?? createLogger(config.server.logLevel)
  if (!opts.clock && config.dev.clockOffsetSeconds !== 0) log.warn('the clock is shifted for a test (dev.clock_offset_seconds); never run a real business like this', { offset_seconds: config.dev.clockOffsetSeconds })
  const store = opts.store ?? openStore(databasePath(config))
  migrate(store)
  const prefix = config.brand.prefix

  // Repositories: the only code that touches the store's tables.
  const plansRepo = makePlansRepository(store, clock)
  if (plansRepo.seedOnce(config.plans)) log.info('seeded the plan catalog', { plans: config.plans.map((p) => p.slug) })
  const plans = new PlansService(plansRepo, store, prefix)
  const keysRepo = makeKeysRepository(store)
  const repos: SharedRepositories = {
    sites: makeSitesRepository(store, {
      planHasSsh: (slug) => plans.get(slug).features.ssh,
      range: config.ssh.portRange,
      isFree: (port) => hostPortFree(config.ssh.listenAddress, port),
    }),
    archives: makeArchivesRepository(store),
    keys: keysRepo,
    accounts: makeAccountsRepository(store),
    checkout: makeCheckoutRepository(store),
    billing: makeBillingRepository(store),
    domains: makeDomainsRepository(store),
    offsite: makeOffsiteCopiesRepository(store),
  }

  // Drivers: the only code that touches Docker.
  const instanceId = instanceIdOf(store)
  // A cluster's sites run as Swarm services across the nodes (compose/cluster.ts); a test's own
  // runtime is used as it is.
  const jobs = new JobRunner(store, clock, log, {})
  const events = new EventLog({ store, clock, log })
  const cluster = !opts.runtime && config.cluster.enabled ? buildClusterCore(config, { store, instanceId, log }) : null
  const runtime = opts.runtime ?? cluster?.runtime ?? new DockerRuntime({ socketPath: config.containers.dockerSocket, instanceId, subnetPool: config.containers.subnetPool, pidsLimit: config.containers.pidsLimit, sshListenAddress: config.ssh.listenAddress, helperImages: helperImagesOf(config.containers.images), log })
  return {
    config, clock, log, store, instanceId, runtime, cluster,
    events,
    eventFeed: new EventFeed(events, (accountId, slug) => repos.sites.findOwned(accountId, slug)),
    // Every database beside its site: on this box's engine, or on its node's (docs/cluster.md "Databases on nodes").
    databaseRuntime: opts.databaseRuntime ?? (cluster
      ? new DockerDatabaseRuntime({ instanceId, log, images: config.containers.databaseImages, ...cluster.runtime.databases })
      : localDatabaseRuntime({ socketPath: config.containers.dockerSocket, instanceId, log, images: config.containers.databaseImages, helperImages: helperImagesOf(config.containers.images) })),
    placement: opts.placement ?? cluster?.placement ?? null,
    jobs,
    plans,
    keys: new KeysService(keysRepo, store, clock, prefix, events),
    changes: new SiteChanges(),
    repos,
    archiveStore: new LocalArchiveStore(config.archives.dir),
    room: new BoxRoom({ disk: () => diskSpaceOf(config.server.dataDir), settings: config.disk, sitesDiskGb: sitesDiskGbOf(store) }),
  }
}
