import type { ApiKeyRow } from '../../store/schema'

/**
 * What other areas read and write of the API keys (through this area's index.ts): the methods of
 * KeysRepository they use, which implements it. The repository itself is this area's own; a consumer
 * takes a Pick of this, the composition root hands it the repository.
 */
export interface KeyRecords {
  list(accountId: string, includeRevoked: boolean): ApiKeyRow[]
  /** Revokes every active key of an account (account deletion); returns how many. */
  revokeForAccount(accountId: string, at: number): number
  /** Revokes every active key bound to a site (when the site is deleted); returns how many. */
  revokeForSite(siteId: string, at: number): number
}
