import { join } from 'node:path'
import { hostPortFree } from './lib/ports'
import { filesIn } from './lib/private-file'
import { AccountsRepository } from './domain/accounts/repository'
import { AuthService } from './domain/auth/service'
import { ClientAddress } from './api/http/client-address'
import { KeysRepository } from './domain/keys/repository'
import { KeysService } from './domain/keys/service'
import { PlansRepository } from './domain/plans/repository'
import { PlansService } from './domain/plans/service'
import { RateLimiter } from './domain/rate-limits/service'
import { EngineHealth, type StatusInfo } from './domain/status'
import { BillingRepository } from './domain/billing/repository'
import { BillingService } from './domain/billing/service'
import { CheckoutRepository } from './domain/checkout/repository'
import { CheckoutService } from './domain/checkout/service'
import { SiteDirectory } from './domain/sites/directory'
import { SiteRunner } from './domain/sites/runner'
import { SiteGuard } from './domain/sites/guard'
import { APPLY_JOBS, ApplySiteJob } from './domain/sites/apply'
import { HostedSessions } from './domain/checkout/hosted-sessions'
import { PROVISION_JOB, Provisioner } from './domain/sites/provisioning'
import { SitesRepository } from './domain/sites/repository'
import { SitesService } from './domain/sites/service'
import { SiteLifecycle } from './domain/sites/lifecycle'
import { SiteReaper, type SiteDataPurger } from './domain/sites/reaper'
import { ArchivesRepository } from './domain/archives/repository'
import { ArchiveRetention } from './domain/archives/retention'
import { CREATE_ARCHIVE_JOB, CreateArchiveJob, RESTORE_ARCHIVE_JOB, RestoreArchiveJob, type ArchiveJobDeps } from './domain/archives/jobs'
import { RestoreGuard } from './domain/archives/restore-guard'
import { ArchivesService } from './domain/archives/service'
import { LocalArchiveStore } from './drivers/archives/local'
import { waitForAnswer } from './drivers/runtime/first-answer'
import { gnuTar } from './drivers/archives/home-tar'
import { LocalWorkFolder } from './drivers/archives/work-folder'
import { selectProcessor } from './drivers/payments/select'
import type { PaymentProcessor } from './drivers/payments/types'
import { LocalLedgerStore } from './domain/billing/local-ledger-repository'
import { PortalLinks } from './domain/billing/portal-links'
import { SubscriptionBilling } from './domain/billing/subscriptions'
import { Charges } from './domain/billing/charges'
import { AccountsService } from './domain/accounts/service'
import { DockerRuntime } from './drivers/runtime/docker'
import { HostSiteFiles, type SiteFiles } from './drivers/files/site-reader'
import { openSiteHome } from './drivers/files/home'
import { entryExists } from './drivers/files/entry'
import type { ContainerRuntime } from './drivers/runtime/types'
import { selectFirewall } from './drivers/firewall/select'
import type { SiteFirewall } from './drivers/firewall/types'
import { SiteFirewallKeeper } from './domain/sites/firewall-keeper'
import { JobRunner } from './jobs/runner'
import { ModulesService } from './domain/modules/service'
import { ClaimsRepository } from './domain/claims/repository'
import { ClaimsService } from './domain/claims/service'
import { SshService } from './domain/ssh/service'
import { moduleDrivers } from './modules/catalog'
import { selectAiProvider } from './drivers/ai/select'
import { AiBudget } from './modules/ai-calls'
import { AiUsageRepository } from './modules/ai-usage-repository'
import { ChatbotService } from './modules/chatbot/service'
import { TranslationService } from './modules/translation/service'
import { ContentService } from './modules/content/service'
import { SiteModulesEdge } from './modules/edge'
import { SiteChanges } from './domain/sites/changes'
import { Reconciler } from './domain/sites/reconciler'
import { SiteHealer } from './domain/sites/healer'
import { EdgeMetrics } from './edge/metrics'
import { Deployer } from './domain/deployments/deployer'
import { DeploymentsRepository } from './domain/deployments/repository'
import { DEPLOY_JOB, DeploymentsService } from './domain/deployments/service'
import { LogsService } from './domain/logs/service'
import { EdgeAccessLog } from './domain/logs/access-log'
import { edgeWritesAccessLog } from './domain/logs/sources'
import { FilesService } from './domain/files/service'
import { MetricsRepository } from './domain/metrics/repository'
import { SiteMetricsService } from './domain/metrics/service'
import { measureDiskUsage } from './drivers/files/disk-usage'
import { DnsRepository } from './domain/dns/repository'
import { DnsService } from './domain/dns/service'
import { ZoneBook } from './domain/dns/zones'
import { BerthNames } from './domain/berth-names'
import { ChallengeBook } from './domain/tls/challenges'
import { CertificateManager, ISSUE_CERTIFICATE_JOB } from './domain/tls/manager'
import { Preflight } from './domain/tls/preflight'
import { CertificatesRepository } from './domain/tls/repository'
import { AcmeIssuer } from './drivers/certs/acme'
import { CertificateFolder } from './drivers/certs/files'
import { DomainsRepository } from './domain/domains/repository'
import { DomainsService } from './domain/domains/service'
import { DomainRenewals } from './domain/domains/renewals'
import { DomainRegistration, REGISTER_DOMAIN_JOB } from './domain/domains/registration'
import { selectRegistrar } from './drivers/registrar/select'
import type { SiteRow } from './store/schema'
import { instanceIdOf, secretOf } from './store/settings'
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
  /** The payment processor the config names: the built-in test-mode one or Stripe. */
  processor: PaymentProcessor
  runtime: ContainerRuntime
  jobs: JobRunner
  /** Brings sites' containers in line with the store; knows where each running site answers. */
  runner: SiteRunner
  /** Resolves the caller's site of a request (404 for another's, 409 when it cannot change). */
  guard: SiteGuard
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
  /** Keeps the host firewall rules that keep sites off the host and link-local addresses (at start and each reconcile pass). */
  firewall: SiteFirewallKeeper
  /** Brings an active site's container back as soon as the engine reports it gone. */
  healer: SiteHealer
  /** Requests, bytes and latency per site, counted by the edge proxy. */
  metrics: EdgeMetrics
  /** The access log the edge writes for sites whose web server cannot log the request target. */
  accessLog: EdgeAccessLog
  /** Site logs, read from the volumes. */
  logs: LogsService
  /** The files API: sites' home folders, from the host. */
  files: FilesService
  /** Read-only access to sites' files, the only way the AI modules reach them (docs/architecture.md). */
  siteFiles: SiteFiles
  deployments: DeploymentsService
  /** Stored edge counts per site and day, and the containers' current resource use. */
  siteMetrics: SiteMetricsService
  /** DNS records of sites and domains. */
  dns: DnsService
  /** Berth's zones, read by the DNS server. */
  zones: ZoneBook
  domains: DomainsService
  /** ACME challenges of open orders: HTTP-01 tokens for the edge, DNS-01 TXT for the zones. */
  challenges: ChallengeBook
  /** Certificates for every name served, obtained and renewed in jobs (issue 12). */
  certs: CertificateManager
  /** Renews domains with auto-renew before they expire; run by maintenance. */
  renewals: DomainRenewals
  /** Every charge of a card: pending, charged with its key, settled or refunded (billing/charges.ts). */
  charges: Charges
  /** Subscriptions after the purchase: renewals, retries, suspension, cancellation, proration. */
  subscriptions: SubscriptionBilling
  billing: BillingRepository
  /** Signed links to the built-in billing portal. */
  portalLinks: PortalLinks
  accountsRepo: AccountsRepository
  /** Account update and deletion, and the billing portal's link. */
  accounts: AccountsService
  /** What the AI modules do to sites' traffic at the edge. */
  modulesEdge: SiteModulesEdge
  /** The chatbot module's per-site indexes. */
  chatbot: ChatbotService
  /** The content module's page generation. */
  content: ContentService
}

/** A payment still pending after this long belongs to no request in flight. */
const ORPHANED_PAYMENT_MS = 15 * 60_000

export const databasePath = (config: Config) => join(config.server.dataDir, 'berth.db')
/** Where the certificates Berth serves and their keys are kept, one pair per certificate. */
const certificatesDir = (config: Config) => join(config.server.dataDir, 'tls', 'certs')
/** The ACME account's key and state. */
const acmeDir = (config: Config) => join(config.server.dataDir, 'tls', 'acme')

/**
 * The files that hold secrets, kept 0600 (`berth serve` checks them at start): the store (the
 * portal's signing secret, key and token hashes) with its WAL and shared memory, the ACME account
 * key, and each certificate's key (with the certificate, written the same way).
 */
export function secretFilesOf(config: Config): string[] {
  const db = databasePath(config)
  return [db, `${db}-wal`, `${db}-shm`, ...filesIn(acmeDir(config)), ...filesIn(certificatesDir(config))]
}

/**
 * The composition root: opens (and migrates) the store, seeds the catalog on first start, and
 * wires repositories, drivers and services. Tests call it with their own config, clock and logger.
 */
export function buildServices(config: Config, opts: { clock?: Clock; log?: Logger; store?: Store; runtime?: ContainerRuntime; firewall?: SiteFirewall | null } = {}): Services {
  const clock = opts.clock ?? shiftedClock(config.dev.clockOffsetSeconds * 1000)
  const log = opts.log ?? createLogger(config.server.logLevel)
  if (!opts.clock && config.dev.clockOffsetSeconds !== 0) log.warn('the clock is shifted for a test (dev.clock_offset_seconds); never run a real business like this', { offset_seconds: config.dev.clockOffsetSeconds })
  const store = opts.store ?? openStore(databasePath(config))
  migrate(store)
  const prefix = config.brand.prefix

  // Repositories: the only code that touches the store's tables.
  const plansRepo = new PlansRepository(store, clock)
  if (plansRepo.seedOnce(config.plans)) log.info('seeded the plan catalog', { plans: config.plans.map((p) => p.slug) })
  const keysRepo = new KeysRepository(store)
  const accounts = new AccountsRepository(store)
  const checkoutRepo = new CheckoutRepository(store)
  const billingRepo = new BillingRepository(store)
  const deploymentsRepo = new DeploymentsRepository(store)
  const archivesRepo = new ArchivesRepository(store)
  const plans = new PlansService(plansRepo, store, prefix)
  const sitesRepo = new SitesRepository(store, {
    planHasSsh: (slug) => plans.get(slug).features.ssh,
    range: config.ssh.portRange,
    isFree: (port) => hostPortFree(config.ssh.listenAddress, port),
  })

  // Drivers: the only code that touches Docker and the payment processor.
  const instanceId = instanceIdOf(store)
  const runtime = opts.runtime ?? new DockerRuntime({ socketPath: config.containers.dockerSocket, instanceId, subnetPool: config.containers.subnetPool, pidsLimit: config.containers.pidsLimit, sshListenAddress: config.ssh.listenAddress, log })
  const hostedSessions = new HostedSessions({ repo: checkoutRepo, plans })
  const portalLinks = new PortalLinks({ siteUrl: config.server.siteUrl, secret: secretOf(store, 'portal_secret'), clock })
  const processor = selectProcessor(config, {
    local: { lookup: (ref) => hostedSessions.find(ref), ledger: new LocalLedgerStore(store, clock), portal: portalLinks, now: () => clock.now(), delayMs: config.dev.paymentDelayMs },
    stripeEvents: {
      claim: (id) => billingRepo.claimEvent(id, 'stripe', clock.now()),
      settle: (id) => billingRepo.settleEvent(id),
      release: (id) => billingRepo.releaseEvent(id),
    },
    clock,
    log,
  })
  const archiveFiles = new LocalArchiveStore(config.archives.dir)

  // Sites and their containers.
  const keys = new KeysService(keysRepo, store, clock, prefix)
  const runner = new SiteRunner({ sites: sitesRepo, plans, runtime, containers: config.containers, log, waitForAnswer })
  // Every charge: pending first with a key derived from what is paid for, then the processor, then settled.
  const charges = new Charges({ store, clock, log, repo: billingRepo, processor })
  const billing = new BillingService(billingRepo, checkoutRepo, charges, clock, log)
  const retention = new ArchiveRetention(archivesRepo, archiveFiles, log)
  const restores = new RestoreGuard(archivesRepo)
  // AI modules (issue 14): the provider the hoster configured (none by default), each site's token
  // allowance (its plan's ai_tokens_monthly; none for a site that is gone), and what keeps derived
  // data (the chatbot's index, the sitemap) in step with files.
  const changes = new SiteChanges()
  const aiProvider = selectAiProvider(config, log)
  const aiBudget = new AiBudget(new AiUsageRepository(store), clock, (siteId) => {
    const site = sitesRepo.find(siteId)
    return site ? plans.get(site.planSlug).features.ai_tokens_monthly : 0
  })
  // The modules read sites' files through this reader only (never node:fs: src/modules/no-fs.test.ts).
  const siteFiles = new HostSiteFiles((slug) => runtime.homePath(slug))
  const chatbot = new ChatbotService({
    dir: join(config.server.dataDir, 'modules', 'chatbot'), files: siteFiles,
    diskBytes: (siteId) => plans.get(sitesRepo.find(siteId)?.planSlug ?? '').features.disk_gb * 1024 ** 3, provider: aiProvider, budget: aiBudget, log,
  })
  const translation = aiProvider ? new TranslationService({ store, clock, provider: aiProvider, budget: aiBudget, log }) : null
  const modulesEdge = new SiteModulesEdge({ chatbot, translation, files: siteFiles, log })
  changes.subscribe((c) => {
    chatbot.changed(c.siteId)
    modulesEdge.changed(c.siteId)
  })
  const dnsRepo = new DnsRepository(store)
  const domainsRepo = new DomainsRepository(store)
  const archiveWork: ArchiveJobDeps = { repo: archivesRepo, retention, restores, files: archiveFiles, runtime, runner, sites: sitesRepo, backupsKept: config.archives.backupsKept, clock, log, tar: gnuTar, work: new LocalWorkFolder(join(config.archives.dir, '.work')), changes }
  const applySite = new ApplySiteJob({ sites: sitesRepo, runner, log })
  // Berth's own names are never a tenant's (issue 23, part 6): refused where a tenant names a
  // domain or a slug, and a row from before (or a name the config has since taken) is not served.
  const berthNames = new BerthNames({ sitesDomain: config.sites.domain, siteUrl: config.server.siteUrl, nameservers: config.dns.nameservers })
  const tenantZoneSources = () => {
    const sources = dnsRepo.zoneSources()
    return { ...sources, domains: sources.domains.filter((d) => berthNames.tenantMayHold(d.name)) }
  }
  const zoneSettings = { sitesDomain: config.sites.domain, nameservers: config.dns.nameservers, publicIpv4: config.dns.publicIpv4, publicIpv6: config.dns.publicIpv6 }
  const dns = new DnsService({ store, clock, repo: dnsRepo, settings: zoneSettings, unlinkSite: (siteId, at) => domainsRepo.unlinkSite(siteId, at) })
  const registrar = selectRegistrar(config, clock)
  // Certificates: the manager is made below, once the names it serves are; its job calls it then.
  let certs!: CertificateManager
  const jobs = new JobRunner(store, clock, log, {
    [ISSUE_CERTIFICATE_JOB]: { run: (id) => certs.issue(id), failed: async () => {}, attempts: 1 },
    [PROVISION_JOB]: new Provisioner({ sites: sitesRepo, runner, clock, log, onFailed: (site, error) => billing.refundPurchaseOf(site, error) }),
    [APPLY_JOBS.scale]: applySite,
    [APPLY_JOBS.restore]: applySite,
    [DEPLOY_JOB]: new Deployer(deploymentsRepo, sitesRepo, plans, runtime, clock, log, entryExists, changes),
    [CREATE_ARCHIVE_JOB]: new CreateArchiveJob(archiveWork),
    [RESTORE_ARCHIVE_JOB]: new RestoreArchiveJob(archiveWork),
    [REGISTER_DOMAIN_JOB]: new DomainRegistration({ store, clock, log, repo: domainsRepo, registrar, charges, billing: billingRepo, accounts, dns }),
  })
  // Names: DNS records, zones and domains.
  const challenges = new ChallengeBook()
  const zones = new ZoneBook({ store, repo: { zoneSources: tenantZoneSources }, clock, settings: zoneSettings, challenges })
  certs = new CertificateManager({
    store, clock, log, repo: new CertificatesRepository(store), issuer: selectIssuer(config, log), challenges, jobs,
    preflight: new Preflight({ resolver: config.tls.preflightResolver, publicIpv4: config.dns.publicIpv4, nameservers: config.dns.nameservers }),
    files: new CertificateFolder(certificatesDir(config)), sitesDomain: config.sites.domain, apiHost: apiHostOf(config), wildcard: config.tls.wildcard,
    sources: tenantZoneSources,
  })
  const names = { linkedDomains: (ids: string[]) => domainsRepo.linkedTo(ids), recordsOf: (rows: Pick<SiteRow, 'id' | 'slug'>[]) => dns.recordsOfSites(rows), tls: (siteIds: string[]) => certs.forSites(siteIds) }
  const sites = new SitesService({ store, clock, sites: sitesRepo, checkouts: checkoutRepo, billing: billingRepo, plans, jobs, runner, siteUrl: config.server.siteUrl, sitesDomain: config.sites.domain, berthNames, names })
  const domains = new DomainsService({
    store, clock, log, repo: domainsRepo, registrar, charges, jobs, accounts, billing: billingRepo, plans, sites: sitesRepo, dns,
    nameservers: config.dns.nameservers, berthNames, pricePercent: config.registrar.pricePercent, tls: (domainIds) => certs.forDomains(domainIds),
  })
  const subscriptions = new SubscriptionBilling({ store, clock, log, repo: billingRepo, accounts, sites: sitesRepo, plans, jobs, runner, charges })
  const checkout = new CheckoutService({ store, clock, log, prefix, repo: checkoutRepo, plans, processor, accounts, keys, billing: billingRepo, charges, sites, jobs })
  // Payments a stop left pending whose subject has no pass of its own (renewals and domains have theirs).
  charges.onPending('purchase', (payment) => checkout.resumePurchase(payment))
  charges.onPending('proration', (payment) => subscriptions.resumeProration(payment))
  // The processor's events (a hosted payment going through) move checkouts on.
  processor.onEvent((event) => checkout.onProcessorEvent(event))
  // A card replaced at the processor (Stripe's portal) goes on file and pays what is unpaid.
  processor.onEvent((event) => subscriptions.onProcessorEvent(event))
  const archives = new ArchivesService({ store, clock, repo: archivesRepo, retention, sites: sitesRepo, plans, jobs, config: config.archives, work: archiveWork.work, log })
  // What else a reaped site owns, removed after its container and volume: its snapshots and
  // backups (rows and stored files); DNS records later likewise.
  const reaper = new SiteReaper({ store, clock, sites: sitesRepo, keys: keysRepo, billing: billingRepo, runner, purgers: [archives, dns, {
    // A deleted site's chatbot index and cached translations go with it.
    removeAllFor: async (siteId) => {
      chatbot.remove(siteId)
      translation?.remove(siteId)
    },
  }], log })
  const edgeMetrics = new EdgeMetrics()
  const accessLog = new EdgeAccessLog(runtime, log, openSiteHome)
  const files = new FilesService(runtime, restores, openSiteHome, undefined, changes)
  const modules = new ModulesService({
    store, clock, log, plans,
    drivers: moduleDrivers({ chatbot, translation, sitemap: modulesEdge }),
    providerConfigured: aiProvider !== null,
    tokensUsed: (siteId) => aiBudget.used(siteId),
    activeSites: () => sitesRepo.listWithStatus(['active']),
  })
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
      dns: { port: config.dns.listen?.port ?? null, nameservers: config.dns.nameservers },
      registrar: { name: registrar.name, sandbox: registrar.sandbox },
      engine: new EngineHealth(),
    },
    instanceId,
    processor,
    runtime,
    jobs,
    runner,
    guard: new SiteGuard(sitesRepo),
    sites,
    modules,
    modulesEdge,
    chatbot,
    content: new ContentService({ provider: aiProvider, budget: aiBudget, files, siteUrl: (slug) => sites.siteUrl(slug), log }),
    ssh: new SshService({ ssh: config.ssh, plans, runtime }),
    claims: new ClaimsService({ store, clock, log, repo: new ClaimsRepository(store), sites: sitesRepo, keys, runtime, prefix }),
    lifecycle: new SiteLifecycle({ store, clock, sites: sitesRepo, views: sites, billing: billingRepo, money: subscriptions, plans, jobs, runner, log }),
    subscriptions,
    billing: billingRepo,
    portalLinks,
    accountsRepo: accounts,
    accounts: new AccountsService({
      store, clock, log, repo: accounts, keys: keysRepo, billing: billingRepo, subscriptions, sites: sitesRepo, domains: domainsRepo, runner, processor, siteUrl: config.server.siteUrl,
    }),
    reaper,
    archives,
    checkout,
    directory: new SiteDirectory({
      store, sites: sitesRepo, runner, domains: { linked: () => domainsRepo.linked().filter((d) => berthNames.tenantMayHold(d.name)) }, modules: (site) => modules.edgeFlags(site),
      edgeLogs: (site) => edgeWritesAccessLog(plans.get(site.planSlug).hosting_type),
    }),
    reconciler: new Reconciler({ sites: sitesRepo, runner, runtime, jobs, reaper, log }),
    firewall: new SiteFirewallKeeper({ firewall: opts.firewall === undefined ? selectFirewall(config) : opts.firewall, log }),
    healer: new SiteHealer({ sites: sitesRepo, runner, log }),
    metrics: edgeMetrics,
    accessLog,
    logs: new LogsService(plans, runtime, openSiteHome, accessLog),
    files,
    siteFiles,
    deployments: new DeploymentsService({ store, clock, repo: deploymentsRepo, jobs }),
    siteMetrics: new SiteMetricsService(clock, new MetricsRepository(store), edgeMetrics, runtime, log, measureDiskUsage),
    dns,
    zones,
    domains,
    challenges,
    certs,
    renewals: new DomainRenewals({ repo: domainsRepo, domains, accounts, charges, clock, log, store }),
    charges,
  }
}

/** The ACME issuer when a CA is configured and HTTPS listens; null otherwise (no certificates). */
function selectIssuer(config: Config, log: Logger): AcmeIssuer | null {
  const acme = config.tls.acme
  if (!acme || !config.tls.listen) return null
  return new AcmeIssuer({ ...acme, dir: acmeDir(config), log })
}

/** site_url's host when it is a name of its own (not an address, localhost or a site name): the API's certificate. */
function apiHostOf(config: Config): string | null {
  const host = new URL(config.server.siteUrl).hostname
  if (/^[\d.]+$/.test(host) || host.includes(':') || host.startsWith('[') || host === 'localhost' || host.endsWith('.localhost')) return null
  if (host === config.sites.domain || host.endsWith(`.${config.sites.domain}`)) return null
  return host
}

/**
 * Follows the engine's events for this instance's containers: a site's container that dies or is
 * removed is brought back at once (SiteHealer); when the event stream was lost (the engine
 * restarted), a reconcile pass compares everything. Whether the engine answers goes to the
 * platform status. Returns the stop function.
 */
export function followContainerEvents(s: Services): () => void {
  const watch = s.runtime.watch({
    onEvent: (e) => s.healer.onEvent(e),
    onReconnect: () => void s.reconciler.reconcile().catch((err) => s.log.error('reconcile failed', { error: (err as Error).message })),
    onReachable: (reachable) => s.status.engine.set(reachable),
  })
  return () => {
    s.healer.stop()
    watch.close()
  }
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
  void s.renewals.renewDue()
  void s.subscriptions.runDue()
  // A payment pending this long is no request's any more (a processor that was unreachable).
  void s.charges.resumePending(s.clock.now() - ORPHANED_PAYMENT_MS)
  void s.chatbot.maintain(s.modules.sitesWith('chatbot').map((site) => ({ siteId: site.id, slug: site.slug })))
}
