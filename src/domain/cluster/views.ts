import type { NodeState } from '../../core/enums'

/** A node as `berth nodes list` shows it (its JSON with --json). */
export interface NodeView {
  /** `control` for the control plane, else the node's id (`node_...`). */
  id: string
  name: string
  /** Its address on the private network. */
  address: string
  /**
   * Where the internet reaches it: the host the SSH view of its sites gives (`berth node join
   * --public-address`, `berth nodes set`); for the control plane, config ssh.host. Null: none
   * given, and its sites' SSH view says so.
   */
  public_address: string | null
  state: NodeState
  capacity: { memory_bytes: number; cpus: number }
  /** The memory of its sites' plans, added up: what placement counts as taken. */
  used_memory_bytes: number
  /** The slugs of the sites it runs, sorted. */
  sites: string[]
  joined_at: string | null
  /** When its agent last answered the control plane (null for the control plane itself, and before the first answer). */
  last_seen_at: string | null
  removed_at: string | null
}

/** What became of one site of an evacuated node. */
export interface EvacuatedSite {
  slug: string
  /** The node it runs on now; null when it could not be brought back. */
  node: string | null
  /** The archive its files came from; null when it had none (it serves an empty home). */
  archive: { id: string; kind: string; source: 'local' | 'offsite' } | null
  /** When the data it serves now was taken (the archive's time); null without an archive. */
  data_from: string | null
  /** The changes lost with the node: milliseconds from its archive to the evacuation; null without an archive (everything). */
  lost_ms: number | null
  /** `restored`, `empty` (no archive: served with an empty home), or `failed`. */
  result: 'restored' | 'empty' | 'failed'
  /** What went wrong, or what is missing. */
  problem: string | null
}

/** `berth nodes drain --move`'s answer: the node, and what became of each site it ran. */
export interface DrainView extends NodeView {
  moves: {
    slug: string
    /** The node it was moved to; null when it could not be (it stays where it was, serving). */
    to: string | null
    result: 'moved' | 'failed'
    unavailable_ms: number | null
    problem: string | null
  }[]
}

/** `berth nodes evacuate`'s answer. */
export interface EvacuationView {
  node: string
  sites: EvacuatedSite[]
}

/** `berth sites move`'s answer. */
export interface MoveView {
  slug: string
  from: string
  to: string
  /** The archive taken for the move (kind backup): the data the site serves on its new node. */
  archive: { id: string; created_at: string }
  /**
   * In milliseconds, as visitors saw it: from berth serve's edge answering the site's "being
   * brought back" page (it stopped sending its requests to the old container) to its first answer
   * from the new one; without an edge to ask, from the switch to the new one answering.
   */
  unavailable_ms: number
  /**
   * True: berth serve's edge serves the site from its new node (unavailable_ms ends there). False:
   * it did not within 30 s (unavailable_ms is that long so far; berth serve's log says why).
   * null: the edge could not be asked (berth serve is not running).
   */
  edge_serves: boolean | null
  /** The whole move, archive included. */
  total_ms: number
}
