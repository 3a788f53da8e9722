import type Docker from 'dockerode'
import { engineCall, openEngine } from './engine'

/**
 * A box's engine in the Swarm (issue 28, docs/cluster.md): what `berth node join`, the agent and
 * the control plane's start ask of their local engine. Every function takes the engine's Unix
 * socket and throws RuntimeUnavailableError when nothing answers there.
 */

/** The engine's standing in the Swarm and what `GET /v1/info` of an agent reports from it. */
export interface EngineSwarmInfo {
  /** `docker info` .Swarm.LocalNodeState: inactive, pending, active, error, locked. */
  state: string
  /** This engine's node id in the Swarm; null when it is in none. */
  nodeId: string | null
  /** True when this engine is a manager of its Swarm. */
  manager: boolean
  memoryBytes: number
  cpus: number
  engineVersion: string
}

/** How long a membership call may take: a join waits for the manager's answer. */
const MEMBERSHIP_TIMEOUT_MS = 60_000
/** The Swarm's own port on a manager (`docker swarm join ... ADDR:2377`). */
export const SWARM_PORT = 2377
/** The Swarm's node discovery between every two boxes, over TCP and UDP. */
export const SWARM_GOSSIP_PORT = 7946
/** The Swarm's VXLAN data path (UDP), Docker's default (`--data-path-port`, which Berth leaves). */
export const SWARM_DATA_PORT = 4789
/**
 * Tasks Swarm keeps per site, the running one included (its default is 5): each ended one is a
 * dead container on the node that ran it, until Swarm prunes it. Two keep the last ended task,
 * for `docker service ps` and the runtime's word on a failed start (site-services.ts taskProblem).
 */
export const TASK_HISTORY_LIMIT = 2
/** What Berth sets of the Swarm's spec, at `swarm init` and at the control plane's start. */
export const SWARM_SPEC = { Orchestration: { TaskHistoryRetentionLimit: TASK_HISTORY_LIMIT } }

export async function swarmInfo(socket: string): Promise<EngineSwarmInfo> {
  const docker = await openEngine(socket, 10_000)
  const info = await engineCall(socket, () => docker.info())
  const swarm = (info.Swarm ?? {}) as { LocalNodeState?: string; NodeID?: string; ControlAvailable?: boolean }
  return {
    state: swarm.LocalNodeState ?? 'inactive',
    nodeId: swarm.NodeID || null,
    manager: swarm.ControlAvailable === true,
    memoryBytes: Number(info.MemTotal ?? 0),
    cpus: Number(info.NCPU ?? 0),
    engineVersion: String(info.ServerVersion ?? ''),
  }
}

/**
 * Makes the engine a Swarm manager advertising `advertiseAddress` (the control plane at its
 * start): `docker swarm init` with SWARM_SPEC when it is in no Swarm; when it manages one
 * already, its spec is brought to SWARM_SPEC if it differs. Throws when it is a worker of another
 * Swarm (the hoster must leave it first). Returns its node id.
 */
export async function ensureManager(socket: string, advertiseAddress: string): Promise<string> {
  const before = await swarmInfo(socket)
  const docker = await openEngine(socket, MEMBERSHIP_TIMEOUT_MS)
  if (before.state === 'active' && before.manager) {
    await keepSwarmSpec(socket, docker)
    return before.nodeId!
  }
  if (before.state !== 'inactive') {
    throw new Error(`the engine on ${socket} is in a Swarm as a worker (state ${before.state}); run docker swarm leave on this box first`)
  }
  await engineCall(socket, () => docker.swarmInit({ ListenAddr: `${hostPart(advertiseAddress)}:${SWARM_PORT}`, AdvertiseAddr: `${hostPart(advertiseAddress)}:${SWARM_PORT}`, Spec: SWARM_SPEC }))
  const after = await swarmInfo(socket)
  return after.nodeId!
}

/** Updates the managed Swarm's spec to SWARM_SPEC when it differs (a Swarm made before, or by hand); true when it did. */
async function keepSwarmSpec(socket: string, docker: Docker): Promise<boolean> {
  const swarm = (await engineCall(socket, () => docker.swarmInspect())) as { Version: { Index: number }; Spec: { Orchestration?: { TaskHistoryRetentionLimit?: number } } }
  if (swarm.Spec.Orchestration?.TaskHistoryRetentionLimit === TASK_HISTORY_LIMIT) return false
  const spec = { ...swarm.Spec, Orchestration: { ...swarm.Spec.Orchestration, ...SWARM_SPEC.Orchestration } }
  await engineCall(socket, () => docker.swarmUpdate({ _query: { version: swarm.Version.Index }, _body: spec } as never))
  return true
}

/** The token a worker joins the manager's Swarm with (`docker swarm join-token -q worker`). */
export async function workerJoinToken(socket: string): Promise<string> {
  const docker = await openEngine(socket, 10_000)
  const swarm = await engineCall(socket, () => docker.swarmInspect())
  const token = (swarm as { JoinTokens?: { Worker?: string } }).JoinTokens?.Worker
  if (!token) throw new Error(`the engine on ${socket} manages no Swarm: it has no worker join token`)
  return token
}

/**
 * Joins the engine to a Swarm as a worker (`docker swarm join`). A no-op when it is already an
 * active member (a second `berth node join` after a crash). Returns its node id.
 */
export async function joinSwarm(socket: string, join: { token: string; managerAddress: string; advertiseAddress: string }): Promise<string> {
  const before = await swarmInfo(socket)
  if (before.state === 'active') return before.nodeId!
  const docker = await openEngine(socket, MEMBERSHIP_TIMEOUT_MS)
  await engineCall(socket, () => docker.swarmJoin({
    ListenAddr: `${hostPart(join.advertiseAddress)}:${SWARM_PORT}`,
    AdvertiseAddr: `${hostPart(join.advertiseAddress)}:${SWARM_PORT}`,
    RemoteAddrs: [`${hostPart(join.managerAddress)}:${SWARM_PORT}`],
    JoinToken: join.token,
  }))
  const after = await swarmInfo(socket)
  return after.nodeId!
}

/** An address as the host part of `host:port`: IPv6 in brackets. */
export function hostPart(address: string): string {
  return address.includes(':') ? `[${address}]` : address
}

/** Leaves the Swarm (`docker swarm leave`, `--force` for a manager); a no-op when in none. */
export async function leaveSwarm(socket: string, force = false): Promise<void> {
  const before = await swarmInfo(socket)
  if (before.state === 'inactive') return
  const docker = await openEngine(socket, MEMBERSHIP_TIMEOUT_MS)
  await engineCall(socket, () => docker.swarmLeave({ force }))
}

/** The Swarm manager as the join service asks it (domain/cluster/join.ts SwarmManager): the control plane's engine. */
export function swarmManagerOn(socket: string): { workerJoinToken(): Promise<string> } {
  return { workerJoinToken: () => workerJoinToken(socket) }
}
