import { asc, eq, sql } from 'drizzle-orm'
import { accounts, type AccountRow } from '../../store/schema'
import { onFirstUse } from '../../store/prepared'
import type { Store } from '../../store/store'
import type { AccountRecords, AccountCounts } from './records'

export type { AccountCounts } from './records'


export class AccountsRepository implements AccountRecords {
  constructor(private store: Store) {}

  private countsOf = onFirstUse(() => this.store.sqlite.prepare<AccountCounts, [string, string]>(`
    SELECT (SELECT count(*) FROM sites WHERE account_id = ? AND status <> 'deleted') AS sites,
           (SELECT count(*) FROM subscriptions WHERE account_id = ? AND status = 'active') AS active_subscriptions`))

  /** The account's live sites and active subscriptions, counted (whoami). */
  counts(id: string): AccountCounts {
    return this.countsOf().get(id, id)!
  }

  insert(account: { id: string; email: string | null; name: string; createdAt: number }): AccountRow {
    return this.store.write(() =>
      this.store.db.insert(accounts).values({ ...account, updatedAt: account.createdAt }).returning().get(),
    )
  }

  /** Every account of the box, oldest first (berth accounts list). */
  listAll(): AccountRow[] {
    return this.store.db.select().from(accounts).orderBy(asc(accounts.createdAt), asc(sql`rowid`)).all()
  }

  find(id: string): AccountRow | undefined {
    return this.store.db.select().from(accounts).where(eq(accounts.id, id)).get()
  }

  /** Keeps `methodId` as the account's payment method on file (and the processor's customer holding it, when given). */
  setPaymentMethod(id: string, methodId: string, label: string, at: number, customerRef?: string | null): void {
    this.store.write(() => {
      this.store.db.update(accounts).set({ paymentMethodId: methodId, paymentMethodLabel: label, updatedAt: at, ...(customerRef ? { processorCustomerRef: customerRef } : {}) }).where(eq(accounts.id, id)).run()
    })
  }

  update(id: string, patch: Partial<Omit<AccountRow, 'id' | 'createdAt'>>): AccountRow {
    return this.store.write(() => this.store.db.update(accounts).set(patch).where(eq(accounts.id, id)).returning().get()!)
  }

  /** The account whose processor customer is `customerRef` (a Stripe webhook names the customer). */
  findByCustomer(customerRef: string): AccountRow | undefined {
    return this.store.db.select().from(accounts).where(eq(accounts.processorCustomerRef, customerRef)).get()
  }
}
