import type Docker from 'dockerode'
import { CONTROL_NODE, type ClusterNode } from '../../cluster/types'
import { nodeOfService } from './site-services'
import type { ServiceInfo } from './service-spec'

/** A node as placement weighs it. */
export interface NodeCapacity {
  id: string
  /** Only `active` nodes take new sites (draining, down and removed never). */
  state: string
  memoryBytes: number
  /** The memory limits of the site services pinned to it. */
  usedBytes: number
}

/**
 * The node for a new site of `memoryMb`: the active node with the most free memory (its memory
 * less the limits of the sites placed there) that fits it, not in `except`; null when none fits.
 * Ties go to the earlier node of the list (the control plane first).
 *
 * @example
 * chooseNode([{ id: 'control', state: 'active', memoryBytes: 4 * GiB, usedBytes: 3 * GiB }, { id: 'n1', state: 'active', memoryBytes: 2 * GiB, usedBytes: 0 }], 512) // 'n1'
 */
export function chooseNode(nodes: NodeCapacity[], memoryMb: number, except: string[] = []): string | null {
  const need = memoryMb * 1024 * 1024
  let best: { id: string; free: number } | null = null
  for (const node of nodes) {
    if (node.state !== 'active' || except.includes(node.id)) continue
    const free = node.memoryBytes - node.usedBytes
    if (free < need) continue
    if (!best || free > best.free) best = { id: node.id, free }
  }
  return best?.id ?? null
}

/**
 * The nodes as placement weighs them: the control node (always active, `controlMemoryBytes`)
 * first, then the store's nodes, each with the memory limits of the services `placed` on it.
 * With `engineMemory` (Swarm node id → the memory its engine reported to the Swarm's manager,
 * Description.Resources.MemoryBytes), a node counts the smaller of that and what it reported
 * itself at its join and since: a node cannot pull sites to it by claiming memory its engine does
 * not have, and one the Swarm does not know counts none.
 */
export function nodeCapacities(
  controlMemoryBytes: number, nodes: ClusterNode[], placed: { nodeId: string; memoryBytes: number }[], engineMemory?: ReadonlyMap<string, number>,
): NodeCapacity[] {
  const used = new Map<string, number>()
  for (const p of placed) used.set(p.nodeId, (used.get(p.nodeId) ?? 0) + p.memoryBytes)
  const counted = (n: ClusterNode) => (engineMemory ? Math.min(n.memoryBytes, (n.swarmNodeId && engineMemory.get(n.swarmNodeId)) || 0) : n.memoryBytes)
  return [
    { id: CONTROL_NODE, state: 'active', memoryBytes: controlMemoryBytes, usedBytes: used.get(CONTROL_NODE) ?? 0 },
    ...nodes.map((n) => ({ id: n.id, state: n.state, memoryBytes: counted(n), usedBytes: used.get(n.id) ?? 0 })),
  ]
}

/**
 * The node for a new site of `memoryMb` on the Swarm of `manager`: the control node with the
 * manager engine's memory, the store's `nodes` believed only as far as their engines' figures as
 * the manager has them, each less the limits of the `services` placed there (chooseNode).
 * Throws, saying what to do, when no node fits.
 */
export async function chooseOnSwarm(manager: Docker, services: ServiceInfo[], nodes: ClusterNode[], memoryMb: number, except: string[]): Promise<string> {
  const [info, swarm] = await Promise.all([manager.info(), manager.listNodes()])
  const placed = services.map((s) => ({ nodeId: nodeOfService(s), memoryBytes: s.Spec.TaskTemplate.Resources?.Limits?.MemoryBytes ?? 0 }))
  const engineMemory = new Map(swarm.map((n) => [n.ID ?? '', n.Description?.Resources?.MemoryBytes ?? 0]))
  const chosen = chooseNode(nodeCapacities(info.MemTotal ?? 0, nodes, placed, engineMemory), memoryMb, except)
  if (!chosen) throw new Error(`No active node has ${memoryMb} MB of memory free for this site; add a node (berth node join) or free one.`)
  return chosen
}
