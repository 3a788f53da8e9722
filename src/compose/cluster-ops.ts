/**
 * The node operations of a cluster (domain/cluster: nodes.ts, move.ts, health.ts) over the built
 * services and the cluster runtime's placement. `berth serve` builds them to run the health
 * monitor (followNodeHealth in upkeep.ts) and show down nodes' sites `recovering`; the admin's
 * commands (`berth nodes ...`, `berth sites move`) build them in their own process, over the
 * same composition as `berth serve` (buildServices with the cluster runtime), and run the
 * operation there.
 */
import { cpus, totalmem } from 'node:os'
import { join } from 'node:path'
import { NodeHealth, type NodeHealthDeps } from '../domain/cluster/health'
import { SiteMover } from '../domain/cluster/move'
import { NodesRepository } from '../domain/cluster/repository'
import { NodesService } from '../domain/cluster/nodes'
import { SiteTransfer, type EdgeProbe } from '../domain/cluster/site-transfer'
import { ArchivesRepository } from '../domain/archives/repository'
import { ArchiveFetchBack } from '../domain/offsite/fetch-back'
import { OffsiteCopiesRepository } from '../domain/offsite/repository'
import { SitesRepository } from '../domain/sites/repository'
import type { SitesServiceDeps } from '../domain/sites/service'
import { LocalArchiveStore } from '../drivers/archives/local'
import { acceptsConnection } from '../drivers/runtime/first-answer'
import { SWARM_GOSSIP_PORT } from '../drivers/runtime/swarm-membership'
import { edgeProbe } from '../drivers/cluster/edge-probe'
import type { ClusterNode, NodeLink, Placement } from '../drivers/cluster/types'
import type { SiteFirewallPolicy } from '../drivers/firewall/types'
import { open } from '../drivers/offsite/age'
import { LocalLanding } from '../drivers/offsite/landing'
import type { Config } from '../config/config'
import type { Logger } from '../lib/logger'
import { buildServices, type Services } from './index'

export interface NodeOps {
  nodes: NodesService
  mover: SiteMover
  repo: NodesRepository
}

/** What the node operations take of the built services. */
export type NodeOpsDeps = Pick<Services, 'config' | 'store' | 'clock' | 'log' | 'plans' | 'runner' | 'archiveJobs' | 'offsite' | 'jobs'>

/** NodesService and SiteMover over the services, the cluster runtime's `placement`, and whether a node's agent `answers` now (agentAnswers). */
export function buildNodeOps(s: NodeOpsDeps, placement: Placement, answers: (node: ClusterNode) => Promise<boolean>, opts: { edge?: EdgeProbe; engineUp?: (node: ClusterNode) => Promise<boolean> } = {}): NodeOps {
  const { config, store, clock, log, plans, runner } = s
  // berth serve's edge on this box, asked when a move stops and resumes serving its site.
  const edge = 'edge' in opts ? opts.edge : edgeProbe(config.server.listen, config.sites.domain)
  const repo = new NodesRepository(store)
  // No SSH port policy: these operations never hand out ports (the runner's run moves a taken one).
  const sites = new SitesRepository(store)
  const archiveStore = new LocalArchiveStore(config.archives.dir)
  const transfer = new SiteTransfer({
    placement, runner, sites, clock, log, edge,
    archives: new ArchivesRepository(store),
    create: s.archiveJobs.create,
    restore: s.archiveJobs.restore,
    // Recorded as running jobs meanwhile: berth serve, in its own process, then neither settles
    // the archive as stranded (which would end the `restoring` claim, skip the restore and let its
    // healer start the site on an empty home) nor clears the work files under the restore.
    underway: (kind, id, work) => s.jobs.runHere(kind, id, work),
    bytes: new ArchiveFetchBack({
      archives: archiveStore,
      offsite: s.offsite && {
        repo: new OffsiteCopiesRepository(store),
        destination: s.offsite.destination,
        sealing: { open },
        identity: s.offsite.identity,
        files: new LocalLanding(join(config.archives.dir, '.work')),
      },
    }),
  })
  const mover = new SiteMover({ sites, nodes: repo, placement, transfer, clock, log, edge })
  return {
    repo,
    nodes: new NodesService({
      nodes: repo, placement, sites, plans, transfer, clock, log, mover, answers, engineUp: opts.engineUp,
      control: { address: config.cluster.address, memoryBytes: totalmem(), cpus: cpus().length, publicAddress: config.ssh.host },
    }),
    mover,
  }
}

/** How long `berth nodes evacuate` waits for a node's agent before taking it for silent. */
const PROBE_TIMEOUT_MS = 3_000

/** True when the node's agent answers `GET /v1/info` well within PROBE_TIMEOUT_MS (its engine included: the agent asks it). */
export function agentAnswers(link: Pick<NodeLink, 'fetch'>): (node: ClusterNode) => Promise<boolean> {
  return async (node) => {
    try {
      const res = await link.fetch(node, '/v1/info', { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) })
      await res.body?.cancel()
      return res.ok
    } catch {
      return false
    }
  }
}

/** The health monitor of `berth serve`; its `recovering()` feeds the sites' views (lateRecovering). */
export function buildNodeHealth(
  s: Pick<Services, 'store' | 'clock' | 'log' | 'runner'>,
  cluster: { placement: Placement; link: NodeLink; firewall?: SiteFirewallPolicy | null | (() => SiteFirewallPolicy | null); forwardsLost?: (nodeId: string) => void; accepts?: NodeHealthDeps['accepts'] },
): NodeHealth {
  return new NodeHealth({
    nodes: new NodesRepository(s.store), link: cluster.link, placement: cluster.placement, runner: s.runner, clock: s.clock, log: s.log,
    firewall: policyReader(cluster.firewall), forwardsLost: cluster.forwardsLost, accepts: cluster.accepts ?? ((endpoint) => acceptsConnection(endpoint)),
  })
}

/**
 * The sites' views are built before the health monitor (which needs their runner): they read
 * it through this, set once the monitor is made. Hand `source` to buildSites (needs.recovering).
 */
export function lateRecovering(): { source: NonNullable<SitesServiceDeps['recovering']>; set(health: Pick<NodeHealth, 'recovering' | 'version'>): void } {
  let health: Pick<NodeHealth, 'recovering' | 'version'> | null = null
  const none: ReadonlySet<string> = new Set()
  return {
    source: { recovering: () => health?.recovering() ?? none, version: () => health?.version() ?? 0 },
    set: (h) => void (health = h),
  }
}

/** Why a node command cannot run on this box: no cluster. */
export class NoClusterError extends Error {}

/**
 * The node operations for an admin command, in its own process: the services `berth serve`
 * builds (the cluster runtime when cluster.enabled), nothing started (no listener, job runner or
 * background pass: `berth serve` may run beside and sees the store's changes within
 * EXTERNAL_CHECK_MS). Throws NoClusterError on a single box.
 */
export function buildNodeOpsAdmin(config: Config, log: Logger): NodeOps & { close(): Promise<void> } {
  if (!config.cluster.enabled) throw new NoClusterError('this box runs no cluster (cluster.enabled is false); see docs/cluster.md, "Turning it on"')
  const s = buildServices(config, { log, firewall: null })
  const jobsStopped = s.jobs.stop()
  const close = async () => {
    await jobsStopped
    s.store.close()
  }
  if (!s.cluster) {
    void close()
    throw new NoClusterError('cluster.enabled is true but the services were built without the cluster runtime (a runtime of their own)')
  }
  // The box still takes connections on the Swarm's gossip port: its engine runs (and its sites may
  // serve) though its agent is silent. Asked directly: the manager's view of a powered-off node
  // stays `ready` for several seconds after berth serve has marked it down.
  const engineUp = (node: ClusterNode) => acceptsConnection({ address: node.address, port: SWARM_GOSSIP_PORT }, 2_000)
  return { ...buildNodeOps(s, s.cluster.placement, agentAnswers(s.cluster.link), { engineUp }), close }
}

/** A policy given as it is, or as the function that reads it (it follows the nodes); undefined stays undefined. */
function policyReader(policy: SiteFirewallPolicy | null | (() => SiteFirewallPolicy | null) | undefined): (() => SiteFirewallPolicy | null) | undefined {
  if (policy === undefined || typeof policy === 'function') return policy
  return () => policy
}
