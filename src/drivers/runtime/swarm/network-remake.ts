import type Docker from 'dockerode'
import type { Logger } from '../../../lib/logger'
import { orNull } from '../engine'
import type { Engine } from '../site-runtime'
import type { SiteEndpoint } from '../types'
import { withoutSwap } from './hardening'
import { nodeOfService, replicasOf, type SiteServices } from './site-services'
import { untilNoContainer, untilRunning } from './site-tasks'

export interface NetworkRemakeDeps {
  manager: Docker
  services: SiteServices
  engineOf(nodeId: string): Promise<Engine>
  instanceId: string
  /** How long the site's task may take to run again. */
  startWithinMs: number
  /** The site's endpoint from its running container (the node's forward follows its address). */
  endpointOf(engine: Engine, info: Docker.ContainerInspectInfo): Promise<SiteEndpoint>
  log: Logger
}

/**
 * Makes the site's swarm network again, attachable: a site made before databases ran on nodes
 * has one that is not, which no database container can join, and Swarm changes no network's
 * Attachable. Swarm removes no network a service names either, so the service first leaves it
 * (no replica, no network), the network is removed and made again (the same name, the same /28 on
 * each node from its configuration network), then the service gets its network and replicas back
 * and its task is waited for, the node's forward following its address. The site does not serve
 * for those seconds. A no-op when the network is attachable already (or missing: the site's next
 * start makes it). Run under the site's lock (ClusterRuntime).
 */
export async function remakeNetwork(d: NetworkRemakeDeps, slug: string): Promise<void> {
  const names = d.services.names(slug)
  const network = await orNull(d.manager.getNetwork(names.network).inspect() as Promise<Docker.NetworkInspectInfo>)
  if (!network || network.Attachable) return
  const service = await d.services.find(slug)
  const engine = service ? await d.engineOf(nodeOfService(service)) : null
  /** The service as it was (its replicas) on the site's network, whichever that is now. */
  const putBack = async () => {
    const now = service ? await d.services.find(slug) : null
    if (service && now) await d.services.update(now, (spec) => ({ ...spec, Mode: service.Spec.Mode, TaskTemplate: { ...spec.TaskTemplate, Networks: [{ Target: names.network }] } }))
  }
  try {
    if (service && engine) {
      await d.services.update(service, (spec) => ({ ...spec, Mode: { Replicated: { Replicas: 0 } }, TaskTemplate: { ...spec.TaskTemplate, Networks: [] } }))
      await untilNoContainer(engine, d.instanceId, slug, true)
    }
    await d.services.removeNetwork(names.network)
    await d.services.ensureNetwork(names)
  } catch (err) {
    // The task would not leave, or the network would not go: the site goes back on its network
    // (the old one, or one made again) as it ran, and the caller hears why.
    await d.services.ensureNetwork(names).then(putBack).catch((again) => d.log.error('could not put a site back on its network after a failed remake; its next start will', { site: slug, error: (again as Error).message }))
    throw err
  }
  d.log.info('made the site\'s network again, attachable (for its databases)', { site: slug })
  if (!service || !engine) return
  await putBack()
  if (replicasOf(service) === 0) return
  const running = await untilRunning(engine, d.instanceId, slug, {
    before: null, sshPort: null, withinMs: d.startWithinMs, problem: (since) => d.services.taskProblem(slug, since),
  })
  await d.endpointOf(engine, await withoutSwap(engine.docker, running, d.log))
}
