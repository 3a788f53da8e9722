import { DnsQueryCounts } from '../dns/query-counts'
import { makePrometheusRepository, scrapeMetrics } from '../domain/prometheus'
import type { StatusInfo } from '../domain/status'
import type { CertificateManager } from '../domain/tls'
import type { SiteRunner } from '../domain/sites'
import type { DatabaseLife } from '../domain/databases'
import { machineFacts } from '../drivers/host/machine'
import { processStatsReader } from '../drivers/process/stats'
import type { EdgeMetrics } from '../edge/metrics'
import type { Core } from './core'

/** /metrics for Prometheus: what its scrape reads, and the DNS server's answer counts it reports. */
export interface Prometheus {
  /** Handed to the DNS server, which counts its answers into it. */
  dnsCounts: DnsQueryCounts
  /** The exposition document (src/domain/prometheus/scrape.ts). */
  scrape(): Promise<string>
}

/** Builds the scrape from the edge's counters, the store, the runner, the certificates and the process. */
export function buildPrometheus(core: Pick<Core, 'config' | 'store'>, from: {
  metrics: EdgeMetrics
  runner: Pick<SiteRunner, 'endpointOf'>
  certs: Pick<CertificateManager, 'orderFailures'>
  offsite: StatusInfo['offsite']
  room: StatusInfo['room']
  databases?: Pick<DatabaseLife, 'figures'>
}): Prometheus {
  const dnsCounts = new DnsQueryCounts()
  const repo = makePrometheusRepository(core.store)
  const process = processStatsReader()
  // This box's name until issue 28 gives Berth nodes of its own.
  const node = machineFacts().hostname
  return {
    dnsCounts,
    scrape: () => scrapeMetrics({
      edge: from.metrics,
      repo,
      endpointOf: (slug) => from.runner.endpointOf(slug),
      tlsOrderFailures: () => from.certs.orderFailures(),
      dns: core.config.dns.listen ? dnsCounts : null,
      ...(from.offsite.enabled ? { offsiteStoreCopyAgeSeconds: () => from.offsite.lastStoreCopyAgeSeconds() } : {}),
      process,
      node,
      room: () => from.room.figures(),
      ...(from.databases ? { databases: () => from.databases!.figures() } : {}),
    }),
  }
}
