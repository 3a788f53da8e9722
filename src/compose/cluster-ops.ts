/**
 * The node operations of a cluster (domain/cluster: nodes.ts, move.ts, health.ts) over the built
 * services and the cluster runtime's placement. `berth serve` builds them to run the health
 * monitor (followNodeHealth in upkeep.ts) and show down nodes' sites `recovering`, and hands
 * them to its admin socket (compose/admin.ts), through which the admin's commands (`berth nodes
 * ...`, `berth sites move`) run them.
 */
import { join } from 'node:path'
import { type EdgeProbe, makeNodesRepository, MOVE_RESTORE_JOB, MoveRestoreJob, NodeHealth, type NodeHealthDeps, NodesService, SiteMover, SiteTransfer } from '../domain/cluster'
import type { makeArchivesRepository } from '../domain/archives'
import { ArchiveFetchBack, type BoxIdentity } from '../domain/offsite'
import type { makeOffsiteCopiesRepository } from '../domain/offsite'
import type { makeSitesRepository } from '../domain/sites'
import type { SiteRunner, SitesServiceDeps } from '../domain/sites'
import type { ArchiveStore } from '../drivers/archives/types'
import { machineFacts } from '../drivers/host/machine'
import { acceptsConnection } from '../drivers/runtime/first-answer'
import { edgeProbe } from '../drivers/cluster/edge-probe'
import type { ClusterNode, NodeLink, Placement } from '../drivers/cluster/types'
import type { SiteFirewallPolicy } from '../drivers/firewall/types'
import { open } from '../drivers/offsite/age'
import { LocalLanding } from '../drivers/offsite/landing'
import type { Config } from '../config/config'
import type { Logger } from '../lib/logger'
import { sendAgent } from '../node-agent/client/calls'
import type { Clock } from '../lib/clock'
import type { Store } from '../store/store'
import type { JobRunner } from '../jobs/runner'
import type { CreateArchiveJob, RestoreArchiveJob } from '../domain/archives'
import type { PlansService } from '../domain/plans'
import type { OffsiteDestination } from '../drivers/offsite/types'
import type { DatabaseCarrier } from '../domain/databases'

export interface NodeOps {
  nodes: NodesService
  mover: SiteMover
  repo: ReturnType<typeof makeNodesRepository>
}

/**
 * What the node operations take of the built services (named here, not as a Pick of the whole
 * composition, so this file imports no other file of compose/ and no circle closes through it).
 */
export interface NodeOpsDeps {
  config: Config
  store: Store
  clock: Clock
  log: Logger
  plans: PlansService
  runner: SiteRunner
  archiveJobs: { create: CreateArchiveJob; restore: RestoreArchiveJob }
  offsite: { destination: OffsiteDestination; identity: BoxIdentity } | null
  jobs: Pick<JobRunner, 'runHere' | 'register'>
  /** The composition's repositories and archive store, made once (the sites' with its SSH-port policy). */
  repos: { sites: ReturnType<typeof makeSitesRepository>; archives: ReturnType<typeof makeArchivesRepository>; offsite: ReturnType<typeof makeOffsiteCopiesRepository> }
  archiveStore: ArchiveStore
  /** The sites' databases, which a move carries to its target (domain/databases/placement.ts); absent: none. */
  databases?: DatabaseCarrier
}

/** NodesService and SiteMover over the services, the cluster runtime's `placement`, and whether a node's agent `answers` now (agentAnswers). */
export function buildNodeOps(s: NodeOpsDeps, placement: Placement, answers: (node: ClusterNode) => Promise<boolean>, opts: { edge?: EdgeProbe; engineUp?: (node: ClusterNode) => Promise<boolean> } = {}): NodeOps {
  const { config, store, clock, log, plans, runner } = s
  // berth serve's edge on this box, asked when a move stops and resumes serving its site.
  const edge = 'edge' in opts ? opts.edge : edgeProbe(config.server.listen, config.sites.domain)
  const repo = makeNodesRepository(store)
  const { repos: { sites }, archiveStore } = s
  const transfer = new SiteTransfer({
    placement, runner, sites, clock, log, edge,
    databases: s.databases,
    archives: s.repos.archives,
    create: s.archiveJobs.create,
    restore: s.archiveJobs.restore,
    // Recorded as running jobs meanwhile: the sweeps then neither settle the archive as stranded
    // (which would end the `restoring` claim, skip the restore and let the healer start the site
    // on an empty home) nor clear the work files under the restore; after a kill -9 of berth
    // serve, its next start runs them again (JobRunner.start).
    underway: (kind, id, work) => s.jobs.runHere(kind, id, work),
    bytes: new ArchiveFetchBack({
      archives: archiveStore,
      offsite: s.offsite && {
        repo: s.repos.offsite,
        destination: s.offsite.destination,
        sealing: { open },
        identity: s.offsite.identity,
        files: new LocalLanding(join(config.archives.dir, '.work')),
      },
    }),
  })
  const mover = new SiteMover({ sites, nodes: repo, placement, transfer, clock, log, edge, databases: s.databases })
  // The transfer's restore, left running by a berth serve killed -9: run again at its next start
  // (JobRunner.start, after this), placed off the node it was leaving first.
  s.jobs.register({
    [MOVE_RESTORE_JOB]: new MoveRestoreJob({
      restore: s.archiveJobs.restore, archives: s.repos.archives, sites, placement, nodes: repo, log,
      memoryMbOf: (site) => plans.get(site.planSlug).features.memory_mb,
    }),
  })
  const machine = machineFacts()
  return {
    repo,
    nodes: new NodesService({
      nodes: repo, placement, sites, plans, transfer, clock, log, mover, answers, engineUp: opts.engineUp,
      control: { address: config.cluster.address, memoryBytes: machine.memoryBytes, cpus: machine.cpus, publicAddress: config.ssh.host },
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
      const res = await sendAgent(link, node, 'info', {}, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) })
      await res.body?.cancel()
      return res.ok
    } catch {
      return false
    }
  }
}

/** The health monitor of `berth serve`; its `recovering()` feeds the sites' views (lateRecovering). */
export function buildNodeHealth(
  s: Pick<NodeOpsDeps, 'store' | 'clock' | 'log' | 'runner'> & { outages?: NodeHealthDeps['events'] },
  cluster: { placement: Placement; link: NodeLink; firewall?: SiteFirewallPolicy | null | (() => SiteFirewallPolicy | null); forwardsLost?: NodeHealthDeps['forwardsLost']; accepts?: NodeHealthDeps['accepts'] },
): NodeHealth {
  return new NodeHealth({
    nodes: makeNodesRepository(s.store), link: cluster.link, placement: cluster.placement, runner: s.runner, clock: s.clock, log: s.log, events: s.outages,
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

/** A policy given as it is, or as the function that reads it (it follows the nodes); undefined stays undefined. */
function policyReader(policy: SiteFirewallPolicy | null | (() => SiteFirewallPolicy | null) | undefined): (() => SiteFirewallPolicy | null) | undefined {
  if (policy === undefined || typeof policy === 'function') return policy
  return () => policy
}
