/**
 * The MCP sessions Berth holds, in two pools with limits of their own (issue 23: `initialize`
 * needs no key, and every session keeps an MCP server in memory, so sessions are what a flood
 * costs):
 *
 * - keyed: opened by an `initialize` that carried a valid API key. At most `maxKeyed` in all and
 *   `perKey` per key (a key past it closes its own least recently used one: a client that
 *   reconnects without ending its sessions harms only itself). Closed after `keyedIdleMs` unused.
 * - anonymous: opened without a key (an agent about to register). At most `maxAnonymous`, closed
 *   after `anonymousIdleMs` unused. Anonymous sessions never take a keyed one's place, so a flood
 *   of them cannot lock out agents that hold a key.
 *
 * A pool that is full after its idle sessions are closed refuses new ones: `reserve` says when
 * to retry (the moment its least recently used session would be closed).
 */
export interface SessionLimits {
  maxKeyed: number
  maxAnonymous: number
  perKey: number
  keyedIdleMs: number
  anonymousIdleMs: number
}

/** What a session holds that the table must be able to end. */
export interface Closable {
  close(): Promise<void>
}

interface Entry<T extends Closable> {
  value: T
  keyId: string | null
  lastSeen: number
}

/** A place kept for a session being initialized: `open` fills it, `release` gives it back. */
export interface Reservation<T extends Closable> {
  open(sessionId: string, value: T): void
  release(): void
}

/** A refused session: the pool is full; the earliest a place frees, in seconds. */
export interface Refusal {
  retryAfterSeconds: number
}

/** A full pool is swept again at most this often: a flood of refused requests costs no scans. */
const FULL_SWEEP_INTERVAL_MS = 1_000

export class SessionTable<T extends Closable> {
  private entries = new Map<string, Entry<T>>()
  /** Sessions and reservations per pool. */
  private used = { keyed: 0, anonymous: 0 }
  private byKey = new Map<string, Set<string>>()
  private lastSweep = -Infinity
  /** The least recent use in each pool at the last sweep (for Retry-After without a scan). */
  private oldestSeen = { keyed: Infinity, anonymous: Infinity }

  constructor(private limits: SessionLimits, private now: () => number = Date.now) {}

  get size(): number {
    return this.entries.size
  }

  /** The live session `id`, marked as used now; undefined when unknown (or closed). */
  touch(id: string): T | undefined {
    const entry = this.entries.get(id)
    if (!entry) return undefined
    entry.lastSeen = this.now()
    return entry.value
  }

  /**
   * Keeps a place for a new session of `keyId` (null: anonymous), closing idle sessions first
   * when its pool is full, and the key's least recently used session when the key is at its own
   * limit. A refusal when the pool stays full.
   */
  reserve(keyId: string | null): Reservation<T> | Refusal {
    const pool = keyId === null ? 'anonymous' : 'keyed'
    if (keyId !== null) {
      const own = this.byKey.get(keyId)
      if (own && own.size >= this.limits.perKey) this.close(this.leastRecentlyUsed(own))
    }
    if (this.used[pool] >= this.max(pool)) {
      const now = this.now()
      if (now - this.lastSweep >= FULL_SWEEP_INTERVAL_MS) this.sweep()
      if (this.used[pool] >= this.max(pool)) return { retryAfterSeconds: this.retryAfter(pool) }
    }
    this.used[pool]++
    let settled = false
    return {
      open: (sessionId, value) => {
        if (settled) return
        settled = true
        this.entries.set(sessionId, { value, keyId, lastSeen: this.now() })
        if (keyId !== null) {
          const own = this.byKey.get(keyId) ?? new Set<string>()
          own.add(sessionId)
          this.byKey.set(keyId, own)
        }
      },
      release: () => {
        if (settled) return
        settled = true
        this.used[pool]--
      },
    }
  }

  /** Forgets session `id` (closed by its client, by the transport or by the table). */
  remove(id: string): void {
    const entry = this.entries.get(id)
    if (!entry) return
    this.entries.delete(id)
    this.used[entry.keyId === null ? 'anonymous' : 'keyed']--
    if (entry.keyId !== null) {
      const own = this.byKey.get(entry.keyId)
      own?.delete(id)
      if (own?.size === 0) this.byKey.delete(entry.keyId)
    }
  }

  /** Closes the sessions unused for longer than their pool's idle time. */
  sweep(): void {
    const now = this.now()
    this.lastSweep = now
    const oldest = { keyed: Infinity, anonymous: Infinity }
    for (const [id, entry] of this.entries) {
      const pool = entry.keyId === null ? 'anonymous' : 'keyed'
      if (now - entry.lastSeen > this.idleMs(entry.keyId)) this.close(id)
      else if (entry.lastSeen < oldest[pool]) oldest[pool] = entry.lastSeen
    }
    this.oldestSeen = oldest
  }

  /** Closes every session. */
  closeAll(): void {
    for (const id of [...this.entries.keys()]) this.close(id)
  }

  private close(id: string): void {
    const entry = this.entries.get(id)
    if (!entry) return
    this.remove(id)
    void entry.value.close().catch(() => {})
  }

  private max(pool: 'keyed' | 'anonymous'): number {
    return pool === 'keyed' ? this.limits.maxKeyed : this.limits.maxAnonymous
  }

  private idleMs(keyId: string | null): number {
    return keyId === null ? this.limits.anonymousIdleMs : this.limits.keyedIdleMs
  }

  private leastRecentlyUsed(ids: Set<string>): string {
    let oldest: string | undefined
    for (const id of ids) if (oldest === undefined || this.entries.get(id)!.lastSeen < this.entries.get(oldest)!.lastSeen) oldest = id
    return oldest!
  }

  /**
   * Seconds until the pool's least recently used session (at the last sweep) is idle long enough
   * to be closed; 1 when only reservations fill it (they become sessions or free their place at once).
   */
  private retryAfter(pool: 'keyed' | 'anonymous'): number {
    const oldest = this.oldestSeen[pool]
    const wait = oldest === Infinity ? 1_000 : oldest + (pool === 'anonymous' ? this.limits.anonymousIdleMs : this.limits.keyedIdleMs) - this.now()
    return Math.max(1, Math.ceil(wait / 1000))
  }
}
