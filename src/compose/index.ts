/**
 * The composition root: builds each area from its own file, in the order they need each other
 * (core, payments, names, modules, sites, money, agents, and offsite when copies leave the box),
 * and hands each consumer what it reads.
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

export { databasePath, readInstanceId, secretFilesOf } from './installation'
export { followContainerEvents, followNodeHealth, runMaintenance, type ContainerEventDeps, type MaintenanceDeps } from './upkeep'
export type { BuildOptions } from './core'

/**
 * Everything the API and the CLI work with, built once from the config: each area's slice. A
 * consumer takes the part it reads (`ApiDeps`, `ServerDeps`, `MaintenanceDeps`); tests take all.
 */
export type Services = Omit<Core, 'changes'>
  & Omit<Payments, 'purchases'>
  & Omit<Names, 'registrar' | 'berthNames' | 'ofSites' | 'linkedDomains'>
  & Omit<Modules, 'ai' | 'purger'>
  & Sites
  & Money
  & Agents
  & Consoles
  & {
    status: StatusInfo
    /** Scale, delete and restore of sites. */
    lifecycle: SiteLifecycle
    /** Copies off the box; null when `offsite.url` is empty. */
    offsite: Offsite | null
    /** /metrics for Prometheus. */
    prometheus: Prometheus
    /** In a cluster (compose/cluster.ts): the nodes' health monitor; null on a single box. */
    nodeHealth: ClusterServices['nodeHealth'] | null
    /** In a cluster under `berth serve`: POST /cluster/v1/join; null otherwise. */
    clusterJoin: ClusterServices['clusterJoin']
    clusterJoinTls: ClusterServices['clusterJoinTls']
  }

/**
 * Opens (and migrates) the store, seeds the catalog on first start, and wires repositories,
 * drivers and services. Tests call it with their own config, clock, logger and runtime.
 */
export function buildServices(config: Config, opts: BuildOptions = {}): Services {
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
  const agents = buildAgents(core, { processor: payments.processor, subscriptions: money.subscriptions, runner: sites.runner })
  const { changes: _changes, ...shared } = core
  const { purchases: _purchases, ...pay } = payments
  const { registrar: _registrar, berthNames: _berthNames, ofSites: _ofSites, linkedDomains: _linked, ...named } = names
  const { ai, purger: _purger, ...mods } = modules
  const content = buildContent(core, ai, { files: sites.files, siteUrl: (slug) => sites.sites.siteUrl(slug) })
  const offsite = buildOffsite({ ...core, repo: core.repos.offsite }, sites.archiveEvents)
  const status = statusOf(config, payments.processor, names.registrar, {
    enabled: offsite !== null,
    lastStoreCopyAgeSeconds: () => lastStoreCopyAgeSeconds(core.repos.offsite, core.clock.now()),
  })
  const cluster = core.cluster && late ? buildClusterServices(config, core.cluster, { ...core, runner: sites.runner }, late, opts.clusterPki ?? null) : null
  return {
    ...shared, ...pay, ...named, ...mods, ...sites, ...money, ...agents, ...consoles,
    nodeHealth: cluster?.nodeHealth ?? null,
    clusterJoin: cluster?.clusterJoin ?? null,
    clusterJoinTls: cluster?.clusterJoinTls ?? null,
    status,
    lifecycle: buildLifecycle(core, sites, money.subscriptions),
    offsite,
    prometheus: buildPrometheus(core, { metrics: sites.metrics, runner: sites.runner, certs: names.certs, offsite: status.offsite }),
  }
}

/** What GET /status/ and the discovery documents say of this server. */
function statusOf(config: Config, processor: PaymentProcessor, registrar: Registrar, offsite: StatusInfo['offsite']): StatusInfo {
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
  }
}
