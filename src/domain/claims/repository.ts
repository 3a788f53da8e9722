import { and, eq, gt, isNull } from 'drizzle-orm'
import { apiKeys, claimTokens, type ClaimTokenRow } from '../../store/schema'
import type { Store } from '../../store/store'

/** Claim tokens (hashed) and the site-scoped keys they were traded for. */
export class ClaimsRepository {
  constructor(private store: Store) {}

  insert(row: { id: string; siteId: string; tokenHash: string; createdAt: number; expiresAt: number }): void {
    this.store.db.insert(claimTokens).values(row).run()
  }

  remove(id: string): void {
    this.store.db.delete(claimTokens).where(eq(claimTokens.id, id)).run()
  }

  /** An unused, unexpired token of the site, if any. */
  findPending(siteId: string, now: number): ClaimTokenRow | undefined {
    return this.store.db.select().from(claimTokens)
      .where(and(eq(claimTokens.siteId, siteId), isNull(claimTokens.usedAt), gt(claimTokens.expiresAt, now))).get()
  }

  findByHash(tokenHash: string): ClaimTokenRow | undefined {
    return this.store.db.select().from(claimTokens).where(eq(claimTokens.tokenHash, tokenHash)).get()
  }

  /** Marks the token used; false when another claim used it first (single use under races). */
  markUsed(id: string, at: number, keyId: string): boolean {
    const changed = this.store.db.update(claimTokens).set({ usedAt: at, keyId })
      .where(and(eq(claimTokens.id, id), isNull(claimTokens.usedAt))).returning({ id: claimTokens.id }).all()
    return changed.length === 1
  }

  /** True when the site has a site-scoped key that is not revoked. */
  hasActiveSiteKey(siteId: string): boolean {
    return this.store.db.select({ id: apiKeys.id }).from(apiKeys).where(and(eq(apiKeys.siteId, siteId), isNull(apiKeys.revokedAt))).get() !== undefined
  }
}
