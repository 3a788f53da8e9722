import type { DomainRow, domains } from '../../store/schema'

/**
 * What other areas read and write of the registered domains (through this area's index.ts): the
 * methods of DomainsRepository they use, which implements it. The repository itself is this area's
 * own; a consumer takes a Pick of this, the composition root hands it the repository.
 */
export interface DomainRecords {
  listOwned(accountId: string): DomainRow[]
  update(id: string, set: Partial<typeof domains.$inferInsert>): DomainRow
}
