/**
 * The areas, built from their own files in the order they need each other (core, payments,
 * names, modules, sites, money, agents, consoles, and offsite when copies leave the box), each
 * kept as its own typed slice. compose/'s own: buildApp (compose/app.ts) hands each role the
 * facades it uses from these; nothing outside src/compose/ imports this file.
 */
import type { Config } from '../config/config'
import type { SiteLifecycle } from '../domain/sites'
import { EngineHealth, type StatusInfo } from '../domain/status'
import type { Registrar } from '../drivers/registrar/types'
import type { PaymentProcessor } from '../drivers/payments/types'
import { VERSION } from '../version'
import { buildAgents, type Agents } from './agents'
import { buildConsoles, type Consoles } from './console'
import { buildCore, type BuildOptions, type Core } from './core'
import { buildClusterServices, clusterHomes, type ClusterServices } from './cluster'
import { lateRecovering } from './cluster-ops'
import { buildContent, buildModules, type Modules } from './modules'
import { buildMoney, buildPayments, type Money, type Payments } from './money'
import { buildNames, type Names } from './names'
import { buildOffsite, type Offsite } from './offsite'
import { lastStoreCopyAgeSeconds } from '../domain/offsite'
import { buildLifecycle, buildSites, type Sites } from './sites'
import { buildPrometheus, type Prometheus } from './prometheus'
import { buildWebhooks, type Webhooks } from './webhooks'

/** Each area's slice, as its builder made it. */
export interface Areas {
  core: Core
  payments: Payments
  names: Names
  modules: Modules
  sites: Sites
  money: Money
  agents: Agents
  consoles: Consoles
  /** Scale, delete and restore of sites (made once money is: a plan change is prorated). */
  lifecycle: SiteLifecycle
  /** Copies off the box; null when `offsite.url` is empty. */
  offsite: Offsite | null
  /** What GET /status/ and the discovery documents say of this server. */
  status: StatusInfo
  /** /metrics for Prometheus. */
  prometheus: Prometheus
  /** Webhooks (issue 41): the endpoints' service and the sender. */
  webhooks: Webhooks
  /** In a cluster: the nodes' health monitor and the join's route; null on a single box (or a test's runtime). */
  cluster: ClusterServices | null
}

/**
 * Opens (and migrates) the store, seeds the catalog on first start, and builds each area once.
 * Tests reach this through buildApp with their own config, clock, logger and runtime.
 */
export function buildAreas(config: Config, opts: BuildOptions = {}): Areas {
  const core = buildCore(config, opts)
  // In a cluster, a site's home on another node is reached through its agent, and the sites of a
  // down node show `recovering` once the health monitor (made after the sites) is in place.
  const homes = core.cluster ? clusterHomes(core.cluster) : undefined
  const late = core.cluster && !opts.recovering ? lateRecovering() : null
  const payments = buildPayments(core)
  const names = buildNames(core, payments)
  // Content writes through the files API, made with the sites; the modules service reaches it only on requests.
  const modules = buildModules(core, { content: { generate: (site, brief) => content.generate(site, brief) }, homes })
  const sites = buildSites(core, { purchases: payments.purchases, names, modules: modules.modules, purgers: [modules.purger], firewall: opts.firewall, recovering: opts.recovering ?? late?.source, homes })
  const money = buildMoney(core, payments, sites)
  const consoles = buildConsoles(core, { audit: sites.audit })
  const agents = buildAgents(core, { processor: payments.processor, subscriptions: money.subscriptions, runner: sites.runner, gitPush: (site) => sites.apps.pushes.prepare(site) })
  const content = buildContent(core, modules.ai, { files: sites.files, siteUrl: (slug) => sites.sites.siteUrl(slug) })
  const { store, clock, log, instanceId, archiveStore } = core
  const offsite = buildOffsite({ config, store, clock, log, instanceId, archiveStore, repo: core.repos.offsite }, sites.archiveEvents)
  const status = statusOf(config, payments.processor, names.registrar, {
    enabled: offsite !== null,
    lastStoreCopyAgeSeconds: () => lastStoreCopyAgeSeconds(core.repos.offsite, core.clock.now()),
  }, core.room)
  const webhooks = buildWebhooks({ config, store, clock, log, box: sites.box, events: core.events, resolver: opts.resolver, timeoutMs: opts.webhookTimeoutMs })
  const cluster = core.cluster && late ? buildClusterServices(config, core.cluster, { store, clock, log, runner: sites.runner, outages: sites.outages }, late, opts.clusterPki ?? null) : null
  return {
    core, payments, names, modules, sites, money, agents, consoles, offsite, status, cluster, webhooks,
    lifecycle: buildLifecycle(core, sites, money.subscriptions),
    prometheus: buildPrometheus(core, { metrics: sites.metrics, runner: sites.runner, certs: names.certs, offsite: status.offsite, room: core.room, databases: sites.databaseLife }),
  }
}

/** What GET /status/ and the discovery documents say of this server. */
function statusOf(config: Config, processor: PaymentProcessor, registrar: Registrar, offsite: StatusInfo['offsite'], room: StatusInfo['room']): StatusInfo {
  return {
    region: config.server.region,
    provider: config.server.provider,
    version: VERSION,
    processor: processor.name,
    testMode: processor.testMode,
    dns: { port: config.dns.listen?.port ?? null, nameservers: config.dns.nameservers },
    registrar: { name: registrar.name, sandbox: registrar.sandbox },
    engine: new EngineHealth(),
    offsite,
    room,
  }
}
