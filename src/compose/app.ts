/**
 * `buildApp(config, role)`: what each way the binary runs builds, typed by its role, so an entry
 * point gets the facades it uses and not the whole composition.
 *
 * - `serve`: `berth serve`: what `startServer` takes (`ServerDeps`), the log, the status, and the
 *   store's close.
 * - `admin`: the admin API's facades (admin/facades.ts) in a read-only command's own process,
 *   when no `berth serve` runs (it holds the data folder's lock), nothing started. `berth serve`
 *   builds the same facades as part of its role and hands them to its admin socket.
 * - `restore`: `berth restore`'s second half, `SitesReturn`, over the store it put back.
 * - `test`: the in-process harness (test/helpers/in-process.ts): the serve role's `ServerDeps`
 *   plus the few objects tests drive or look into directly (TestExtras names each and why), and
 *   the admin facades. Nothing is started.
 *
 * Each role's part is named member by member from the areas' slices (compose/areas.ts): no role
 * gets the areas themselves, and no bag of them is spread into one object.
 *
 * The node agent (`berth node`) has a composition of its own, in its own folder (issue 37 item 4).
 * A leaf of compose/: it imports areas.ts, and nothing in compose/ imports it.
 */
import type { Config } from '../config/config'
import type { StatusInfo } from '../domain/status'
import type { Logger } from '../lib/logger'
import type { ServerDeps } from '../server-deps'
import type { AdminFacades } from '../admin/facades'
import { adminFacadesOf, type AdminSources } from './admin'
import type { NodeOpsDeps } from './cluster-ops'
import type { BuildOptions, SharedRepositories } from './core'
import { buildAreas, type Areas } from './areas'
import { buildSitesReturn } from './restore'
import type { SitesReturn } from '../domain/offsite'
import type { SiteReaper, SiteRunner } from '../domain/sites'
import type { JobRunner } from '../jobs/runner'
import type { Store } from '../store/store'
import { DatabaseCarrier } from '../domain/databases'
import type { WebhookSender } from '../domain/webhooks'
import type { EventLog } from '../domain/events'

export type Role = 'serve' | 'admin' | 'restore' | 'test'

export interface ServeApp {
  /** What the listeners and the background work read (src/server.ts). */
  server: ServerDeps
  log: Logger
  status: StatusInfo
  /** The admin API's facades, served on the admin socket (admin/listener.ts). */
  admin: AdminFacades
  /** Closes the store, once the server has stopped. */
  close(): void
}

export interface RestoreApp {
  sitesReturn: SitesReturn
  close(): void
}

export interface AdminApp {
  facades: AdminFacades
  close(): Promise<void>
}

/**
 * What tests reach beyond the serve role's deps, each for a reason a test states (the rest they
 * reach through the API, like an agent):
 * - `store`: the whole store (the serve role hands only its change counter), to seed and read rows;
 * - `jobs`: the whole job runner, to run the queued jobs at once (`runDue`) on the manual clock;
 * - `runner`: where a site answers, and a site started or stopped as the engine would;
 * - `reaper`: the deletion grace period's end, run by the test instead of the reconcile pass;
 * - `instanceId`: the label of this installation's containers, to find them on the engine;
 * - `billing`: the billing repository itself (the serve role hands the API's records), to read a
 *   payment or a subscription the API does not show;
 * - `events`: the event log, to record an event as a state change would and to count its listeners;
 * - `webhookSender`: the whole sender, to look for due deliveries at once (`kick`) on the manual clock and wait for its attempts (`idle`).
 */
export interface TestExtras {
  store: Store
  jobs: JobRunner
  runner: SiteRunner
  reaper: SiteReaper
  instanceId: string
  billing: SharedRepositories['billing']
  events: EventLog
  webhookSender: WebhookSender
}

export interface TestApp {
  services: ServerDeps & TestExtras
  admin: AdminFacades
  /** What the node operations read, for the cluster's double (test/helpers/cluster-double.ts), which builds them over its own placement as berth serve does. */
  nodeOpsDeps: NodeOpsDeps
  close(): void
}

export interface AppOf {
  serve: ServeApp
  admin: AdminApp
  restore: RestoreApp
  test: TestApp
}

/**
 * Opens (and migrates) the store and builds the composition once, then hands the role its part.
 * Nothing is started but by `serve` (startServer); `admin` also stops the job runner at once: the
 * jobs an operation enqueues are the running server's to run, never this process's.
 */
export function buildApp<R extends Role>(config: Config, role: R, opts: BuildOptions = {}): AppOf[R] {
  const a = buildAreas(config, opts)
  const { core } = a
  const close = () => core.store.close()
  if (role === 'serve') {
    const app: ServeApp = { server: serverDepsOf(a), log: core.log, status: a.status, admin: adminFacadesOf(adminSourcesOf(a), core.log), close }
    return app as AppOf[R]
  }
  if (role === 'restore') {
    const { config: restored, runtime, log, repos, archiveStore } = core
    const app: RestoreApp = { sitesReturn: buildSitesReturn({ config: restored, runtime, log, repos, archiveStore, runner: a.sites.runner, dumps: a.sites.archiveDumps }), close }
    return app as AppOf[R]
  }
  if (role === 'test') {
    const extras: TestExtras = { store: core.store, jobs: core.jobs, runner: a.sites.runner, reaper: a.sites.reaper, instanceId: core.instanceId, billing: core.repos.billing, events: core.events, webhookSender: a.webhooks.sender }
    const admin = adminSourcesOf(a)
    const app: TestApp = { services: { ...serverDepsOf(a), ...extras }, admin: adminFacadesOf(admin, core.log), nodeOpsDeps: admin, close }
    return app as AppOf[R]
  }
  const jobsStopped = core.jobs.stop()
  const app: AdminApp = {
    facades: adminFacadesOf(adminSourcesOf(a), opts.log ?? core.log),
    close: async () => {
      await jobsStopped
      core.store.close()
    },
  }
  return app as AppOf[R]
}

/** What `berth serve`'s listeners and background work read (src/server.ts ServerDeps), member by member. */
function serverDepsOf(a: Areas): ServerDeps {
  const { core, payments, names, modules, sites, money, agents, consoles } = a
  return {
    // The API's (api/app.ts ApiDeps).
    config: core.config, log: core.log, status: a.status, plans: core.plans, keys: core.keys,
    auth: agents.auth, limiter: agents.limiter, clients: agents.clients, accounts: agents.accounts, accountsRepo: agents.accountsRepo, claims: agents.claims, ssh: agents.ssh,
    guard: sites.guard, sites: sites.sites, lifecycle: a.lifecycle, logs: sites.logs, files: sites.files, exec: sites.exec, env: sites.env, databases: sites.databases, databaseArchives: sites.databaseArchives, deployments: sites.deployments, appIntake: sites.apps.intake, apps: sites.apps, siteMetrics: sites.siteMetrics, archives: sites.archives,
    checkout: money.checkout, subscriptions: money.subscriptions,
    processor: payments.processor, billing: payments.billing, portalLinks: payments.portalLinks, charges: payments.charges,
    modules: modules.modules, modulesEdge: modules.modulesEdge, chatbot: modules.chatbot,
    dns: names.dns, domains: names.domains, zones: names.zones, certs: names.certs, challenges: names.challenges, renewals: names.renewals,
    eventFeed: core.eventFeed, events: core.events,
    consoles: consoles.consoles, consoleTickets: consoles.consoleTickets, consoleSessions: consoles.consoleSessions,
    // The upkeep's and the listeners' own.
    clock: core.clock, runtime: core.runtime, store: core.store, jobs: core.jobs,
    healer: sites.healer, appCrashes: sites.appCrashes, reconciler: sites.reconciler, databaseLife: sites.databaseLife, audit: sites.audit, directory: sites.directory, metrics: sites.metrics, accessLog: sites.accessLog, logRotation: sites.logRotation, firewall: sites.firewall,
    offsite: a.offsite, prometheus: a.prometheus,
    webhooks: a.webhooks.service, webhookSender: a.webhooks.sender,
    nodeHealth: a.cluster?.nodeHealth ?? null,
    clusterJoin: a.cluster?.clusterJoin ?? null,
    clusterJoinTls: a.cluster?.clusterJoinTls ?? null,
  }
}

/** What the admin facades read (compose/admin.ts AdminSources), member by member. */
function adminSourcesOf(a: Areas): AdminSources {
  const { core, sites } = a
  const { config, store, clock, log, plans, jobs, repos, archiveStore, placement, cluster } = core
  return {
    config, store, clock, log, plans, jobs, repos, archiveStore, placement, cluster,
    runner: sites.runner, archiveJobs: sites.archiveJobs, sites: sites.sites, reaper: sites.reaper, lifecycle: a.lifecycle,
    offsite: a.offsite,
    databases: new DatabaseCarrier({ runtime: core.databaseRuntime, servers: (site) => sites.databases.serversOf(site), leaving: (id) => sites.databaseLife.leaving(id), log }),
  }
}
