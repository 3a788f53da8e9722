import { readdirSync, readFileSync } from 'node:fs'
import { engineCall, ignoring, openEngine } from './engine'
import { LABEL } from './site-container'
import { leaveSwarm, swarmInfo } from './swarm-membership'

/**
 * What a box's engine kept from a former membership of a Berth cluster (issue 36; docs/cluster.md,
 * "Bringing a box back"), as `berth node join` finds it before joining again: a box that was lost
 * (its engine killed), evacuated, removed on the control plane and joined anew.
 *
 * - Its engine is still a worker of the Swarm it was in (the old node, which the control plane
 *   removed): the join leaves it.
 * - Berth's containers of that membership (the ended tasks' containers) and its configuration
 *   networks (`berth-{instance}-{slug}-config`, a /28 each) are still there: the join removes them,
 *   so the control plane makes them afresh. Its volumes (the sites' files as the node last had
 *   them, newer than the archives their evacuation restored) are kept, for the hoster.
 * - The engine's network driver kept the swarm-scoped networks its tasks had (moby#37087): they are
 *   in no network list, but each has its Linux bridge `br-{first 12 characters of its id}`, and
 *   every task of that network on this engine is rejected ("network ... exists", or its subnet
 *   "overlapping"), whatever the node's new membership. Only a start of the engine without its
 *   network database clears them: the join refuses until then, saying how.
 */
export interface FormerMembership {
  /** `docker info` .Swarm.LocalNodeState; `inactive` when in none. */
  swarmState: string
  /** True when the engine manages a Swarm (never left by the join). */
  manager: boolean
  /** Berth's containers (label dev.berth.managed) that run, and that do not. */
  running: string[]
  stopped: string[]
  /** Berth's networks on the engine (its sites' configuration networks). */
  networks: string[]
  /** Berth's volumes: the sites' files as this box last had them (kept). */
  volumes: string[]
  /** Linux bridges of networks the engine no longer lists that its network database still holds. */
  staleBridges: string[]
  /** Such bridges the database does not hold: kernel leftovers of the killed engine (removed by the clearing). */
  orphanBridges: string[]
  /** The file that keeps them (`{DockerRootDir}/network/files/local-kv.db`). */
  networkDatabase: string
}

const MANAGED = { label: [`${LABEL.managed}=true`] }

/** Where the kernel lists the network interfaces (the engine's bridges among them). */
const NET_CLASS = '/sys/class/net'

export async function formerMembership(socket: string): Promise<FormerMembership> {
  const docker = await openEngine(socket, 30_000)
  const swarm = await swarmInfo(socket)
  const [info, containers, networks, volumes, all] = await engineCall(socket, () => Promise.all([
    docker.info(), docker.listContainers({ all: true, filters: MANAGED }), docker.listNetworks({ filters: MANAGED }),
    docker.listVolumes({ filters: MANAGED }), docker.listNetworks(),
  ]))
  const known = all.map((n) => n.Id)
  const unowned = bridges().filter((name) => !known.some((id) => id.startsWith(name.slice('br-'.length))))
  const networkDatabase = `${String(info.DockerRootDir ?? '/var/lib/docker')}/network/files/local-kv.db`
  const held = databaseText(networkDatabase)
  const staleBridges = unowned.filter((name) => held.includes(name.slice('br-'.length)))
  return {
    swarmState: swarm.state,
    manager: swarm.manager,
    running: containers.filter((c) => c.State === 'running').map((c) => c.Names[0]?.replace(/^\//, '') ?? c.Id),
    stopped: containers.filter((c) => c.State !== 'running').map((c) => c.Id),
    networks: networks.map((n) => n.Name),
    volumes: (volumes.Volumes ?? []).map((v) => v.Name),
    staleBridges,
    orphanBridges: unowned.filter((name) => !staleBridges.includes(name)),
    networkDatabase,
  }
}

/**
 * Clears what `formerMembership` found and the join can clear: leaves the old Swarm (a worker's),
 * removes Berth's stopped containers and its networks. Volumes stay. Returns what it did.
 */
export async function clearFormerMembership(socket: string, found: FormerMembership): Promise<string[]> {
  const done: string[] = []
  if (found.swarmState !== 'inactive' && !found.manager) {
    await leaveSwarm(socket, true)
    done.push(`left the Swarm it was in (state ${found.swarmState})`)
  }
  const docker = await openEngine(socket, 30_000)
  // Listed again: leaving the Swarm ends its tasks' containers.
  const containers = await engineCall(socket, () => docker.listContainers({ all: true, filters: MANAGED }))
  await Promise.all(containers.filter((c) => c.State !== 'running').map((c) => ignoring([404], docker.getContainer(c.Id).remove({ force: true, v: false }))))
  if (containers.length > 0) done.push(`removed ${containers.length} container(s) of Berth's former sites`)
  const networks = await engineCall(socket, () => docker.listNetworks({ filters: MANAGED }))
  await Promise.all(networks.map((n) => ignoring([404], docker.getNetwork(n.Id).remove())))
  if (networks.length > 0) done.push(`removed ${networks.length} network(s) of Berth's former sites`)
  for (const name of found.orphanBridges) Bun.spawnSync(['ip', 'link', 'delete', name], { stdout: 'ignore', stderr: 'ignore' })
  if (found.orphanBridges.length > 0) done.push(`removed ${found.orphanBridges.length} bridge(s) its killed engine left (${found.orphanBridges.join(', ')})`)
  return done
}

/** The Linux bridges Docker's bridge driver made (`br-` and the start of a network's id). */
function bridges(): string[] {
  try {
    return readdirSync(NET_CLASS).filter((name) => /^br-[0-9a-z]{12}$/.test(name))
  } catch {
    return []
  }
}

/**
 * The network database's bytes as text (bbolt keeps its keys in the clear: a network the bridge
 * driver holds is under `docker/network/v1.0/bridge/{id}`). Read only, while the engine runs; empty
 * when it cannot be read.
 */
function databaseText(path: string): string {
  try {
    return readFileSync(path).toString('latin1')
  } catch {
    return ''
  }
}
