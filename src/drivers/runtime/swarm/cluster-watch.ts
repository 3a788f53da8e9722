import type { Logger } from '../../../lib/logger'
import { CONTROL_NODE, type ClusterNode } from '../../cluster/types'
import { describeEngine, type EngineAddress } from '../engine'
import { watchSiteEvents, type WatchTiming } from '../events'
import type { SiteEvent, SiteWatch, SiteWatchHandlers } from '../types'
import type { HomePaths } from '../home-paths'

/** How often the node list is read again, so that a node joined later is followed too. */
export const NODES_POLL_MS = 3_000

export interface ClusterWatchOptions {
  /** The manager's engine (this box's, the control node's). */
  manager: EngineAddress
  instanceId: string
  log: Logger
  /** The nodes other than the control plane, from the store. */
  nodes: () => ClusterNode[]
  /** A node's engine, through its agent (NodeLink.engineOptions). */
  engineOf: (node: ClusterNode) => EngineAddress
  /**
   * Runs before a 'start' of a node's container is reported: the runtime points the agent's
   * forward at the new container there, so that whoever hears the start finds the new endpoint.
   */
  beforeStart?: (nodeId: string, e: SiteEvent) => Promise<void>
  timing?: WatchTiming
  pollMs?: number
}

/**
 * Follows the container events of every node's engine, merged into one SiteWatch: container
 * events are node-local (a worker's die never reaches the manager), so each engine is followed
 * on its own with watchSiteEvents (its liveness checks and reconnects), the control node's on its
 * socket and every other node's through its agent. `onReconnect` runs when any of them follows
 * again after a gap; `onReachable` speaks for the manager's engine only (a node's reachability
 * is the node health monitor's, domain/cluster). Nodes are read again every `pollMs`: a node
 * joined later is followed from then on, a removed one no longer.
 */
export function watchCluster(opts: ClusterWatchOptions, handlers: SiteWatchHandlers): SiteWatch {
  const followed = new Map<string, { key: string; watch: SiteWatch }>()
  let closed = false

  const report = (nodeId: string, e: SiteEvent) => {
    if (e.action !== 'start' || !opts.beforeStart) return handlers.onEvent(e)
    void opts.beforeStart(nodeId, e)
      .catch((err) => opts.log.warn('could not point the forward at a started container', { node: nodeId, site: e.slug, error: (err as Error).message }))
      .finally(() => !closed && handlers.onEvent(e))
  }

  const control = watchSiteEvents(
    { socketPath: opts.manager, instanceId: opts.instanceId, log: opts.log, timing: opts.timing },
    { onEvent: (e) => report(CONTROL_NODE, e), onDatabaseEvent: handlers.onDatabaseEvent, onReconnect: handlers.onReconnect, onReachable: handlers.onReachable },
  )

  const sync = () => {
    if (closed) return
    let nodes: ClusterNode[]
    try {
      nodes = opts.nodes().filter((n) => n.state !== 'removed')
    } catch (err) {
      opts.log.warn('could not read the nodes to follow their events', { error: (err as Error).message })
      return
    }
    const seen = new Set<string>()
    for (const node of nodes) {
      seen.add(node.id)
      const address = opts.engineOf(node)
      const key = describeEngine(address)
      const now = followed.get(node.id)
      if (now?.key === key) continue
      now?.watch.close()
      const watch = watchSiteEvents(
        { socketPath: address, instanceId: opts.instanceId, log: opts.log, timing: opts.timing },
        { onEvent: (e) => report(node.id, e), onDatabaseEvent: handlers.onDatabaseEvent, onReconnect: handlers.onReconnect },
      )
      followed.set(node.id, { key, watch })
    }
    for (const [id, { watch }] of followed) {
      if (seen.has(id)) continue
      watch.close()
      followed.delete(id)
    }
  }

  sync()
  const poll = setInterval(sync, opts.pollMs ?? NODES_POLL_MS)
  poll.unref?.()
  return {
    close() {
      closed = true
      clearInterval(poll)
      control.close()
      for (const { watch } of followed.values()) watch.close()
      followed.clear()
    },
  }
}

/**
 * The handlers, first forgetting the cached home of a site whose container starts or goes: it may
 * run on another node now (a move, an evacuation, Swarm replacing its task), and after a
 * reconnect every cached home.
 */
export function forgettingHomes(handlers: SiteWatchHandlers, homes: HomePaths): SiteWatchHandlers {
  return {
    ...handlers,
    onEvent: (e) => {
      if (e.action === 'start' || e.action === 'destroy') homes.forget(e.slug)
      handlers.onEvent(e)
    },
    onReconnect: () => {
      homes.clear()
      handlers.onReconnect()
    },
  }
}
