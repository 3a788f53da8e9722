/** What `startServer` (src/server.ts) takes: each facade its listeners and background work use. */
import type { ApiDeps } from './api/app'
import type { ContainerEventDeps, MaintenanceDeps } from './compose'
import type { NodeHealth } from './domain/cluster'
import type { Config } from './config/config'
import type { BillingRecords } from './domain/billing'
import type { ConsoleSessions, ConsoleTickets } from './domain/console'
import type { OffsiteCopier } from './domain/offsite'
import type { Reconciler, SiteDirectory } from './domain/sites'
import type { CertificateManager, ChallengeBook } from './domain/tls'
import type { ZoneBook } from './domain/dns'
import type { DnsQueryCounts } from './dns/query-counts'
import type { SiteFirewallKeeper } from './drivers/firewall/keeper'
import type { EdgeMetrics } from './edge/metrics'
import type { EdgeAccessLog, LogRotation } from './domain/logs'
import type { JobRunner } from './jobs/runner'
import type { SiteModulesEdge } from './modules/edge'
import type { Store } from './store/store'
import type { WebhookSender } from './domain/webhooks'

/**
 * What the listeners read: the API's services (ApiDeps), the upkeep's (MaintenanceDeps,
 * ContainerEventDeps), and the edge, HTTPS, DNS and background work's own (ListenerDeps).
 * buildApp's `serve` role (compose/app.ts) hands exactly this.
 */
export type ServerDeps = ApiDeps & MaintenanceDeps & ContainerEventDeps & ListenerDeps

/** The edge's, HTTPS's, DNS's, the consoles' and the background work's own facades. */
export interface ListenerDeps {
  config: Config
  /** Its change counter only: the Host-to-slug answer is kept while sites and names do not change. */
  store: Pick<Store, 'versionOf'>
  /** Where the edge sends a site's requests. */
  directory: SiteDirectory
  metrics: EdgeMetrics
  accessLog: EdgeAccessLog
  /** Sites' logs rotated by size every logs.rotate_interval_seconds. */
  logRotation: Pick<LogRotation, 'rotateAll'>
  modulesEdge: SiteModulesEdge
  certs: CertificateManager
  /** ACME's HTTP-01 answers. */
  challenges: ChallengeBook
  /** Berth's zones, served by the DNS listener. */
  zones: ZoneBook
  /** The API's records, and the webhook claims a stopped process left, released at start. */
  billing: BillingRecords & { releaseStaleClaims(before: number): number }
  jobs: Pick<JobRunner, 'start' | 'stop'>
  /** The webhooks' sender (domain/webhooks/sender.ts): started with the listeners, stopped with the jobs. */
  webhookSender: Pick<WebhookSender, 'start' | 'stop'>
  reconciler: Reconciler
  firewall: SiteFirewallKeeper
  /** Copies off the box; null when `offsite.url` is empty. */
  offsite: { copier: Pick<OffsiteCopier, 'kick' | 'stop'> } | null
  consoleTickets: ConsoleTickets
  consoleSessions: ConsoleSessions
  /** /metrics: its scrape, and the DNS listener's answer counts. */
  prometheus: { dnsCounts: DnsQueryCounts; scrape(): Promise<string> }
  /** In a cluster, the nodes' health monitor (compose/cluster-ops.ts, buildNodeHealth): a round every 2 s from the first reconcile on. */
  nodeHealth?: Pick<NodeHealth, 'tick'> | null
  /** POST /cluster/v1/join (compose/cluster.ts buildClusterServices); absent or null with the cluster off. */
  clusterJoin?: ((request: Request) => Promise<Response>) | null
  /** The join listener's certificate (cluster.join_port on cluster.address serves clusterJoin over it). */
  clusterJoinTls?: { cert: string; key: string } | null
}
