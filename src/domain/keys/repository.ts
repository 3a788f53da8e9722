import { and, asc, eq, isNull, sql } from 'drizzle-orm'
import { apiKeys, type ApiKeyRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { KeyRecords } from './records'

/** What authentication needs about a key, read in one indexed query. */
export interface KeyAuthRow {
  key_id: string
  account_id: string
  email: string | null
  language: string
  first_name: string | null
  last_name: string | null
  scopes: string
  site_id: string | null
  site_slug: string | null
  revoked_reason: string | null
  account_status: string
}

export type NewKey = Omit<ApiKeyRow, 'lastUsedAt' | 'revokedAt' | 'revokedReason' | 'replacedBy'>

/**
 * API keys in the store. The lookup by hash runs on every authenticated request, so it is one
 * prepared statement (issue 2: a drizzle query rebuilt per request costs 3x the whole request).
 */
export class KeysRepository implements KeyRecords {
  private byHash

  constructor(private store: Store) {
    this.byHash = store.sqlite.prepare<KeyAuthRow, [string]>(`
      SELECT k.id AS key_id, k.account_id, a.email, a.language, a.first_name, a.last_name, k.scopes, k.site_id, s.slug AS site_slug,
             k.revoked_reason, a.status AS account_status
      FROM api_keys k
      JOIN accounts a ON a.id = k.account_id
      LEFT JOIN sites s ON s.id = k.site_id
      WHERE k.key_hash = ?`)
  }

  findForAuth(hash: string): KeyAuthRow | null {
    return this.byHash.get(hash)
  }

  insert(key: NewKey): ApiKeyRow {
    return this.store.write(() => this.store.db.insert(apiKeys).values(key).returning().get())
  }

  /** The slug of the site a site-scoped key is bound to (its events name it). */
  siteSlugOf(siteId: string): string | null {
    return (this.store.sqlite.query('SELECT slug FROM sites WHERE id = ?').get(siteId) as { slug: string } | null)?.slug ?? null
  }

  find(accountId: string, keyId: string): ApiKeyRow | undefined {
    return this.store.db.select().from(apiKeys).where(and(eq(apiKeys.id, keyId), eq(apiKeys.accountId, accountId))).get()
  }

  list(accountId: string, includeRevoked: boolean): ApiKeyRow[] {
    const where = includeRevoked ? eq(apiKeys.accountId, accountId) : and(eq(apiKeys.accountId, accountId), isNull(apiKeys.revokedAt))
    return this.store.db.select().from(apiKeys).where(where).orderBy(asc(apiKeys.createdAt), asc(sql`rowid`)).all()
  }

  /** Marks a key revoked (or rotated, with its successor); a no-op on a key already revoked. */
  revoke(keyId: string, at: number, reason: 'revoked' | 'rotated', replacedBy: string | null = null): void {
    this.store.write(() => {
      this.store.db.update(apiKeys)
        .set({ revokedAt: at, revokedReason: reason, replacedBy })
        .where(and(eq(apiKeys.id, keyId), isNull(apiKeys.revokedAt)))
        .run()
    })
  }

  /** Revokes every active key bound to a site (when the site is deleted); returns how many. */
  revokeForSite(siteId: string, at: number): number {
    return this.store.write(() =>
      this.store.db.update(apiKeys)
        .set({ revokedAt: at, revokedReason: 'revoked' })
        .where(and(eq(apiKeys.siteId, siteId), isNull(apiKeys.revokedAt)))
        .returning({ id: apiKeys.id }).all().length,
    )
  }

  /** Revokes every active key of an account (account deletion); returns how many. */
  revokeForAccount(accountId: string, at: number): number {
    return this.store.write(() =>
      this.store.db.update(apiKeys)
        .set({ revokedAt: at, revokedReason: 'revoked' })
        .where(and(eq(apiKeys.accountId, accountId), isNull(apiKeys.revokedAt)))
        .returning({ id: apiKeys.id }).all().length,
    )
  }

  /** Writes last-used times gathered in memory, in one transaction. */
  touch(lastUsed: Map<string, number>): void {
    if (lastUsed.size === 0) return
    const stmt = this.store.sqlite.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)')
    this.store.write(() => {
      for (const [id, at] of lastUsed) stmt.run(at, id, at)
    })
  }
}
