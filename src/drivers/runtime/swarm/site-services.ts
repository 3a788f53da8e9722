import type Docker from 'dockerode'
import { CONTROL_NODE } from '../../cluster/types'
import { ignoring, orNull, statusOf } from '../engine'
import { LABEL } from '../site-container'
import { NODE_LABEL, serviceNames, type ServiceInfo, type ServiceNames } from './service-spec'

/** Between two looks while the manager lets go of something. */
const POLL_MS = 100
/** How long a swarm network's removal waits for the node to let go of the task's endpoint. */
const NETWORK_GONE_WITHIN_MS = 30_000

/** The Berth node a site's service is pinned to (its label). */
export function nodeOfService(service: ServiceInfo): string {
  return service.Spec.Labels?.[NODE_LABEL] ?? CONTROL_NODE
}

export function replicasOf(service: ServiceInfo): number {
  return service.Spec.Mode?.Replicated?.Replicas ?? 1
}

/**
 * This instance's site services and swarm networks on the manager. Only services labelled with
 * the instance's id are ever found, so two Berths on one swarm never touch each other's.
 */
export class SiteServices {
  constructor(private manager: Docker, private instanceId: string) {}

  names(slug: string): ServiceNames {
    return serviceNames(this.instanceId, slug)
  }

  async find(slug: string): Promise<ServiceInfo | null> {
    const name = this.names(slug).service
    const service = (await orNull(this.manager.getService(name).inspect())) as ServiceInfo | null
    if (!service || service.Spec.Name !== name || service.Spec.Labels?.[LABEL.instance] !== this.instanceId) return null
    return service
  }

  /** A service by its name as a container's label gives it, when it is this instance's. */
  async named(name: string): Promise<ServiceInfo | null> {
    const service = (await orNull(this.manager.getService(name).inspect())) as ServiceInfo | null
    return service?.Spec.Labels?.[LABEL.instance] === this.instanceId ? service : null
  }

  async list(): Promise<ServiceInfo[]> {
    return (await this.manager.listServices({ filters: { label: [`${LABEL.instance}=${this.instanceId}`] } })) as unknown as ServiceInfo[]
  }

  async remove(service: ServiceInfo): Promise<void> {
    await ignoring([404], this.manager.getService(service.ID).remove())
  }

  /** Updates the service's spec as `change` makes it, at its current version (retried once when another update came first). */
  async update(service: ServiceInfo, change: (spec: ServiceInfo['Spec']) => ServiceInfo['Spec']): Promise<void> {
    let current = service
    for (let attempt = 0; ; attempt++) {
      try {
        await this.manager.getService(current.ID).update({ _query: { version: current.Version.Index }, _body: change(current.Spec) } as never)
        return
      } catch (err) {
        if (attempt > 0 || statusOf(err) === undefined) throw err
        const again = (await orNull(this.manager.getService(current.ID).inspect())) as ServiceInfo | null
        if (!again) throw err
        current = again
      }
    }
  }

  /**
   * Resolves true once Swarm wants no task of the site's service running (its orchestrator took a
   * scale to 0 in: a task that ends then is not replaced), false after `withinMs`.
   */
  async untilNoneWanted(slug: string, withinMs: number): Promise<boolean> {
    const deadline = Date.now() + withinMs
    for (;;) {
      const tasks = await this.manager.listTasks({ filters: { service: [this.names(slug).service], 'desired-state': ['running'] } })
      if (tasks.length === 0) return true
      if (Date.now() > deadline) return false
      await Bun.sleep(POLL_MS / 4)
    }
  }

  scaleTo(service: ServiceInfo, replicas: number): Promise<void> {
    return this.update(service, (spec) => ({ ...spec, Mode: { Replicated: { Replicas: replicas } } }))
  }

  /** The swarm-scoped bridge network of the site, taking its subnet on each node from `{name}-config`. */
  async ensureNetwork(names: ServiceNames): Promise<void> {
    const found = await orNull(this.manager.getNetwork(names.network).inspect() as Promise<Docker.NetworkInspectInfo>)
    if (found && found.Name === names.network) return
    try {
      // No labels: Swarm refuses them beside ConfigFrom (the configuration networks carry them).
      // Attachable: the site's databases are plain containers on its node that join it (database-host.ts).
      await this.manager.createNetwork({ Name: names.network, Driver: 'bridge', Scope: 'swarm', Attachable: true, ConfigFrom: { Network: names.config }, CheckDuplicate: true } as Docker.NetworkCreateOptions)
    } catch (err) {
      if (statusOf(err) !== 409) throw err
    }
  }

  removeNetwork(name: string): Promise<void> {
    return removeNetworkWhenFree(this.manager, name)
  }

  /**
   * The error of the site's latest failed task, as Swarm reports it (a port taken on the node,
   * say), and how many of its tasks the node rejected (state `rejected`: it could not even make
   * the container, as a node whose engine kept a former network, moby#37087).
   */
  async taskProblem(slug: string, since: number): Promise<{ error: string | null; rejected: number }> {
    // Tasks made since `since` only: an older task's error (a port its predecessor still held for
    // a moment, a node since lost) is history, and would be read as today's problem.
    const tasks = (await this.manager.listTasks({ filters: { service: [this.names(slug).service] } })) as { CreatedAt: string; Status?: { Err?: string; State?: string } }[]
    const recent = tasks.filter((t) => Date.parse(t.CreatedAt) >= since)
    const failed = recent.filter((t) => t.Status?.Err).sort((a, b) => b.CreatedAt.localeCompare(a.CreatedAt))[0]
    return { error: failed?.Status?.Err ?? null, rejected: recent.filter((t) => t.Status?.State === 'rejected').length }
  }

}

/**
 * Removes a network of `docker` (by name or id), tried again while it is in use: a node lets go of
 * a swarm network's endpoints a moment after the task's end (and of a database's attachment after
 * its container's removal), and of the configuration network only once the swarm network's local
 * copy is gone. Bounded: the engine's refusal after NETWORK_GONE_WITHIN_MS.
 */
export async function removeNetworkWhenFree(docker: Docker, name: string): Promise<void> {
  const deadline = Date.now() + NETWORK_GONE_WITHIN_MS
  for (;;) {
    try {
      return await ignoring([404], docker.getNetwork(name).remove())
    } catch (err) {
      if (Date.now() > deadline || statusOf(err) === undefined) throw err
      await Bun.sleep(POLL_MS)
    }
  }
}
