import type Docker from 'dockerode'
import type { Logger } from '../../lib/logger'
import { orNull, statusOf } from './engine'
import { freeSiteSubnets, siteAddresses, SITE_PREFIX } from './subnets'

/** Attempts before giving up on finding a free /28 while other instances keep taking them. */
const MAX_ATTEMPTS = 32

/**
 * Creates each site's bridge network on a /28 of its own, carved from the configured pool.
 *
 * Picking a block is a race: other Berth instances on the engine (parallel tests do this) and
 * other sites of this instance allocate at the same time. The engine is the arbiter: it refuses a
 * subnet that overlaps an existing network (403, "Pool overlaps"), and then the next free block is
 * tried. Blocks being created by this process are skipped up front, so that concurrent ensures
 * of one instance do not all race for the same block.
 */
export class SiteNetworks {
  private pending = new Set<string>()

  /** `created` is called after each network this makes (not one found). */
  constructor(private docker: Docker, private pool: string, private log: Logger, private created: () => void = () => {}) {}

  /**
   * The subnet of network `name`, created with `labels` when missing. With `configOnly` it is a
   * configuration network (`docker network create --config-only`): the subnet plan of a Swarm
   * site network on this node (drivers/runtime/swarm); `alsoUsed` adds subnets taken elsewhere
   * (the manager's) to those of this engine.
   */
  async ensure(name: string, labels: Record<string, string>, opts: { configOnly?: boolean; alsoUsed?: () => Promise<string[]> } = {}): Promise<string> {
    const existing = await this.subnetOf(name)
    if (existing) return existing
    const tried = new Set<string>()
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const used = [...subnetsOf(await this.docker.listNetworks()), ...((await opts.alsoUsed?.()) ?? [])]
      const subnet = freeSiteSubnets(this.pool, used, new Set([...tried, ...this.pending])).next().value
      if (!subnet) throw new Error(`The subnet pool ${this.pool} has no free /${SITE_PREFIX} left; widen containers.subnet_pool.`)
      tried.add(subnet)
      this.pending.add(subnet)
      try {
        await this.docker.createNetwork({
          Name: name,
          ...(opts.configOnly ? { ConfigOnly: true } : { Driver: 'bridge' }),
          // Engines before API 1.44 allow two networks of one name unless asked not to.
          CheckDuplicate: true,
          IPAM: { Driver: 'default', Config: [{ Subnet: subnet, Gateway: siteAddresses(subnet).gateway }] },
          Labels: labels,
        })
        this.log.debug('created site network', { network: name, subnet })
        this.created()
        return subnet
      } catch (err) {
        // 409: a network of this name appeared meanwhile (an earlier, interrupted ensure).
        if (statusOf(err) === 409) {
          const found = await this.subnetOf(name)
          if (found) return found
        }
        if (statusOf(err) !== 403) throw err
        this.log.debug('site subnet taken meanwhile; trying the next', { network: name, subnet })
      } finally {
        this.pending.delete(subnet)
      }
    }
    throw new Error(`Could not find a free /${SITE_PREFIX} in ${this.pool} after ${MAX_ATTEMPTS} attempts; other networks keep taking them.`)
  }

  /** Subnets of every network of this engine, for another engine's choice (`alsoUsed`). */
  async used(): Promise<string[]> {
    return subnetsOf(await this.docker.listNetworks())
  }

  /** The IPv4 subnet of network `name`, or null when there is no such network. */
  async subnetOf(name: string): Promise<string | null> {
    const info = await orNull(this.docker.getNetwork(name).inspect() as Promise<Docker.NetworkInspectInfo>)
    if (!info || info.Name !== name) return null
    return info.IPAM?.Config?.find((c) => c.Subnet && !c.Subnet.includes(':'))?.Subnet ?? null
  }
}

/** The CIDR ranges the networks use (IPv6 ones included; freeSiteSubnets skips them). */
function subnetsOf(networks: Docker.NetworkInspectInfo[]): string[] {
  return networks.flatMap((n) => (n.IPAM?.Config ?? []).map((c) => c.Subnet ?? ''))
}
