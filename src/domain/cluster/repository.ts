import { and, asc, eq, gt, inArray, isNull, ne } from 'drizzle-orm'
import type { NodeState } from '../../core/enums'
import type { ClusterNode } from '../../drivers/cluster/types'
import { nodeJoinTokens, nodes, type NodeRow } from '../../store/schema'
import type { Store } from '../../store/store'

/** A node as the join records it. */
export type NewNode = Omit<NodeRow, 'lastSeenAt' | 'removedAt' | 'swarmNodeId' | 'publicAddress'> & { swarmNodeId?: string | null; lastSeenAt?: number | null; publicAddress?: string | null }

/**
 * A node row as the cluster's contract names it (drivers/cluster/types.ts), with when it was
 * removed and where the internet reaches it (null until the hoster gives it).
 */
export type StoredNode = ClusterNode & { removedAt: number | null; publicAddress: string | null }

/**
 * The cluster's nodes and join tokens (store/schema/cluster.ts): the join inserts a node, the node
 * operations and the health monitor change its state (joining, active, draining, down, removed), when it
 * last answered and its capacity. A removed node keeps its row, so that its certificate's
 * fingerprint stays known and refused.
 */
export class NodesRepository {
  constructor(private store: Store) {}

  insert(node: NewNode): StoredNode {
    return toNode(this.store.write(() => this.store.db.insert(nodes).values({ swarmNodeId: null, lastSeenAt: null, ...node }).returning().get()))
  }

  find(id: string): StoredNode | null {
    const row = this.store.db.select().from(nodes).where(eq(nodes.id, id)).get()
    return row ? toNode(row) : null
  }

  /** The node with this name that is not removed, if any. */
  findByName(name: string): StoredNode | null {
    const row = this.store.db.select().from(nodes).where(eq(nodes.name, name)).all().find((r) => r.state !== 'removed')
    return row ? toNode(row) : null
  }

  /** Every node in the order they joined; removed ones too unless `live`. */
  list(opts: { live?: boolean } = {}): StoredNode[] {
    const q = this.store.db.select().from(nodes)
    return (opts.live ? q.where(ne(nodes.state, 'removed')) : q).orderBy(asc(nodes.joinedAt), asc(nodes.id)).all().map(toNode)
  }

  /** Sets the node's state when it is one of `from`; true when it was. */
  setState(id: string, from: NodeState[], state: NodeState, at?: number): boolean {
    return this.store.write(() => this.store.db.update(nodes)
      .set({ state, ...(state === 'removed' ? { removedAt: at ?? null } : {}) })
      .where(and(eq(nodes.id, id), inArray(nodes.state, from)))
      .returning({ id: nodes.id }).get() !== undefined)
  }

  /** Where the internet reaches the node (the SSH view's host for its sites); null forgets it. */
  setPublicAddress(id: string, publicAddress: string | null): void {
    this.store.write(() => {
      this.store.db.update(nodes).set({ publicAddress }).where(eq(nodes.id, id)).run()
    })
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

  insertToken(tokenHash: string, createdAt: number, expiresAt: number): void {
    this.store.write(() => {
      this.store.db.insert(nodeJoinTokens).values({ tokenHash, createdAt, expiresAt }).run()
    })
  }

  /** True when the token is known, unused and unexpired at `now` (the join spends it later). */
  tokenUsable(tokenHash: string, now: number): boolean {
    const row = this.store.db.select().from(nodeJoinTokens).where(eq(nodeJoinTokens.tokenHash, tokenHash)).get()
    return row !== undefined && row.usedAt === null && row.expiresAt > now
  }

  /**
   * Spends a join token and records the node that spent it, in one transaction: true when the
   * token was unused and unexpired at `now`. A second spend of the same token (a replay, or two
   * joins racing) finds it used and records nothing.
   */
  spendTokenAndInsert(tokenHash: string, now: number, node: NewNode): ClusterNode | null {
    return this.store.write(() => {
      const spent = this.store.db.update(nodeJoinTokens)
        .set({ usedAt: now, nodeId: node.id })
        .where(and(eq(nodeJoinTokens.tokenHash, tokenHash), isNull(nodeJoinTokens.usedAt), gt(nodeJoinTokens.expiresAt, now)))
        .returning({ tokenHash: nodeJoinTokens.tokenHash }).all()
      if (spent.length === 0) return null
      return toNode(this.store.db.insert(nodes).values({ swarmNodeId: null, ...node }).returning().get())
    })
  }
}

function toNode(row: NodeRow): StoredNode {
  return {
    id: row.id,
    name: row.name,
    address: row.address,
    agentPort: row.agentPort,
    swarmNodeId: row.swarmNodeId,
    certFingerprint: row.certFingerprint,
    certSerial: row.certSerial,
    state: row.state,
    memoryBytes: row.memoryBytes,
    cpus: row.cpus,
    joinedAt: row.joinedAt,
    lastSeenAt: row.lastSeenAt,
    removedAt: row.removedAt,
    publicAddress: row.publicAddress,
  }
}
