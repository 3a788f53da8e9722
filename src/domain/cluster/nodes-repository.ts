import { and, asc, eq, inArray, ne } from 'drizzle-orm'
import type { NodeState } from '../../core/enums'
import type { ClusterNode } from '../../drivers/cluster/types'
import { nodes, type NodeRow } from '../../store/schema'
import type { Store } from '../../store/store'

/** A node row as the cluster's contract names it (drivers/cluster/types.ts), with when it was removed. */
export type StoredNode = ClusterNode & { removedAt: number | null }

/**
 * The nodes of the cluster (store/schema/cluster.ts) as the node operations read and change them:
 * their state (active, draining, down, removed), when each last answered, its capacity. The
 * join (domain/cluster, the "nodes" part) inserts them; a removed node keeps its row, so that
 * its certificate stays refused.
 */
export class NodesRepository {
  constructor(private store: Store) {}

  /** Every node, oldest join first; removed ones too unless `live`. */
  list(opts: { live?: boolean } = {}): StoredNode[] {
    const q = this.store.db.select().from(nodes)
    const rows = opts.live ? q.where(ne(nodes.state, 'removed')).orderBy(asc(nodes.joinedAt)).all() : q.orderBy(asc(nodes.joinedAt)).all()
    return rows.map(nodeOf)
  }

  find(id: string): StoredNode | undefined {
    const row = this.store.db.select().from(nodes).where(eq(nodes.id, id)).get()
    return row && nodeOf(row)
  }

  /** Sets the node's state when it is one of `from`; true when it was. */
  setState(id: string, from: NodeState[], state: NodeState, at?: number): boolean {
    return this.store.write(() => this.store.db.update(nodes)
      .set({ state, ...(state === 'removed' ? { removedAt: at ?? null } : {}) })
      .where(and(eq(nodes.id, id), inArray(nodes.state, from)))
      .returning({ id: nodes.id }).get() !== undefined)
  }

  /** The node answered: when, and what it said of itself (its capacity, its id in the Swarm). */
  recordSeen(id: string, seen: { at: number; memoryBytes: number; cpus: number; swarmNodeId: string | null }): void {
    this.store.write(() => {
      this.store.db.update(nodes).set({
        lastSeenAt: seen.at, memoryBytes: seen.memoryBytes, cpus: seen.cpus,
        ...(seen.swarmNodeId ? { swarmNodeId: seen.swarmNodeId } : {}),
      }).where(eq(nodes.id, id)).run()
    })
  }

  /** A node row as the join writes it (tests, and the join until it has its own). */
  insert(node: Omit<ClusterNode, 'lastSeenAt'> & { lastSeenAt?: number | null }): StoredNode {
    return this.store.write(() => nodeOf(this.store.db.insert(nodes).values({ ...node, lastSeenAt: node.lastSeenAt ?? null }).returning().get()))
  }
}

function nodeOf(row: NodeRow): StoredNode {
  return {
    id: row.id, name: row.name, address: row.address, agentPort: row.agentPort, swarmNodeId: row.swarmNodeId,
    certFingerprint: row.certFingerprint, certSerial: row.certSerial, state: row.state, memoryBytes: row.memoryBytes,
    cpus: row.cpus, joinedAt: row.joinedAt, lastSeenAt: row.lastSeenAt, removedAt: row.removedAt,
  }
}
