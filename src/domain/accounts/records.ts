import type { AccountRow } from '../../store/schema'

/** What whoami counts of an account. */
export interface AccountCounts {
  sites: number
  active_subscriptions: number
}

/**
 * What other areas read and write of the accounts (through this area's index.ts): the methods of
 * AccountsRepository they use, which implements it. The repository itself is this area's own; a consumer
 * takes a Pick of this, the composition root hands it the repository.
 */
export interface AccountRecords {
  /** Every account of the box, oldest first (berth accounts list). */
  listAll(): AccountRow[]
  find(id: string): AccountRow | undefined
  update(id: string, patch: Partial<Omit<AccountRow, 'id' | 'createdAt'>>): AccountRow
  insert(account: { id: string; email: string | null; name: string; createdAt: number }): AccountRow
  /** Keeps `methodId` as the account's payment method on file (and the processor's customer holding it, when given). */
  setPaymentMethod(id: string, methodId: string, label: string, at: number, customerRef?: string | null): void
  /** The account's live sites and active subscriptions, counted (whoami). */
  counts(id: string): AccountCounts
}
