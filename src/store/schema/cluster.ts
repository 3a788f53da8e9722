import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { NODE_STATES } from '../../core/enums'

/**
 * The nodes of a cluster (issue 28; drivers/cluster/types.ts): the boxes joined with `berth node join`, each
 * running Berth's node agent. The control plane itself is no row: it is the node `control`.
 * A removed node keeps its row (state `removed`) so that its certificate stays refused.
 */
export const nodes = sqliteTable('nodes', {
  /** `node_` and a random suffix; also the Common Name of the node's certificate. */
  id: text('id').primaryKey(),
  /** The node's host name, as it said when joining; shown by `berth nodes list`. */
  name: text('name').notNull(),
  /** The node's address on the private network: its agent, its SSH ports and its forwards. */
  address: text('address').notNull(),
  agentPort: integer('agent_port').notNull(),
  /**
   * Where the internet reaches the node (`berth node join --public-address`, `berth nodes set`):
   * the host the SSH view of its sites gives. Null until the hoster gives one.
   */
  publicAddress: text('public_address'),
  /** The node's id in the Swarm, once its engine joined (null until then). */
  swarmNodeId: text('swarm_node_id'),
  /** SHA-256 of the node's certificate (DER, hex): the control plane talks to no other. */
  certFingerprint: text('cert_fingerprint').notNull(),
  certSerial: text('cert_serial').notNull(),
  /** joining (its agent never answered yet), active, draining (no new sites), down (not answering), removed (certificate revoked). */
  state: text('state', { enum: NODE_STATES }).notNull(),
  memoryBytes: integer('memory_bytes').notNull().default(0),
  cpus: integer('cpus').notNull().default(0),
  joinedAt: integer('joined_at').notNull(),
  /** When its agent last answered the control plane. */
  lastSeenAt: integer('last_seen_at'),
  removedAt: integer('removed_at'),
}, (t) => [index('nodes_state').on(t.state)])

/** Single-use join tokens from `berth nodes token`; only the SHA-256 of each is kept. */
export const nodeJoinTokens = sqliteTable('node_join_tokens', {
  tokenHash: text('token_hash').primaryKey(),
  createdAt: integer('created_at').notNull(),
  expiresAt: integer('expires_at').notNull(),
  /** Set by the join that spent it; a second join with it is refused. */
  usedAt: integer('used_at'),
  nodeId: text('node_id'),
})

export type NodeRow = typeof nodes.$inferSelect
