import type Docker from 'dockerode'
import { CONTROL_NODE } from '../../cluster/types'
import { orNull } from '../engine'
import { siteLabels } from '../site-container'
import type { SiteDisks } from '../site-disks'
import type { Engine } from '../site-runtime'
import type { NodeEngines } from './node-engines'
import type { NodeImages } from './node-images'
import type { SiteServices } from './site-services'
import { remakeNetwork } from './network-remake'
import type { Logger } from '../../../lib/logger'
import type { SiteEndpoint } from '../types'

/**
 * What the databases' runtime (drivers/databases/runtime.ts, DockerDatabaseRuntimeOptions) takes
 * of a cluster (docs/cluster.md "Databases on nodes"): each database is a plain container on the
 * engine of the node its site is placed on, joined to the site's swarm-scoped bridge network
 * (made attachable for that) under its alias `db-{name}`, its volume and disk on that node.
 */
export interface DatabaseHost {
  engineOf(slug: string): Promise<Engine>
  allEngines(): Promise<Engine[]>
  engineOfNode(nodeId: string): Promise<Engine>
  networkOn(engine: Engine, site: { siteId: string; slug: string }): Promise<void>
  imageOn(engine: Engine, image: string): Promise<void>
  disks: SiteDisks
}

export interface DatabaseHostParts {
  instanceId: string
  /** Connects to the manager (SwarmHost.ready); the parts below are read after it. */
  ready(): Promise<void>
  engines(): NodeEngines
  services(): SiteServices
  images: NodeImages
  disks: SiteDisks
  /** The engine of the node the site is placed on (SwarmHost.volumeOn). */
  volumeOn(slug: string): Promise<Engine>
  /** The site's endpoint from its running container (SwarmHost.endpointOf: the node's forward follows it). */
  endpointOf(engine: Engine, slug: string, info: Docker.ContainerInspectInfo): Promise<SiteEndpoint>
  /** How long a site's task may take to run again. */
  startWithinMs: number
  log: Logger
  /** Runs `fn` under the site's lock (ClusterRuntime): its network is made again under it. */
  underLock<T>(slug: string, fn: () => Promise<T>): Promise<T>
}

export function databaseHost(p: DatabaseHostParts): DatabaseHost {
  return {
    disks: p.disks,
    engineOf: async (slug) => (await p.ready(), p.volumeOn(slug)),
    allEngines: async () => (await p.ready(), p.engines().all()),
    engineOfNode: async (nodeId) => (await p.ready(), p.engines().of(nodeId)),
    async networkOn(engine, site) {
      await p.ready()
      const engines = p.engines()
      const names = p.services().names(site.slug)
      // As a site's task needs it on its node (SwarmHost.prepareNode): its /28 there, then the swarm network.
      await engines.networksOf(engine).ensure(names.config, siteLabels(p.instanceId, site), {
        configOnly: true,
        ...(engine.nodeId !== CONTROL_NODE ? { alsoUsed: () => engines.networksOf(engines.manager).used() } : {}),
      })
      await p.services().ensureNetwork(names)
      const attachable = async () => (await orNull(engines.manager.docker.getNetwork(names.network).inspect() as Promise<Docker.NetworkInspectInfo>))?.Attachable !== false
      if (await attachable()) return
      // A site made before databases ran on a cluster: its network is made again, attachable (its task restarts once).
      await p.underLock(site.slug, () => remakeNetwork({
        manager: engines.manager.docker, services: p.services(), engineOf: (id) => engines.of(id), instanceId: p.instanceId,
        startWithinMs: p.startWithinMs, endpointOf: (engine, info) => p.endpointOf(engine, site.slug, info), log: p.log,
      }, site.slug))
      if (!(await attachable())) throw new Error(`The network of site '${site.slug}' could not be made attachable: no container can join it (docs/cluster.md "Databases on nodes").`)
    },
    async imageOn(engine, image) {
      await p.ready()
      const manager = p.engines().manager
      await p.images.ensureOn(manager.bulk, engine.node ? engine.bulk : manager.bulk, engine.nodeId, image)
    },
  }
}
