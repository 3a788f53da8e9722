import { eq } from 'drizzle-orm'
import { accounts, type AccountRow } from '../../store/schema'
import type { Store } from '../../store/store'

export class AccountsRepository {
  constructor(private store: Store) {}

  insert(account: { id: string; email: string | null; name: string; createdAt: number }): AccountRow {
    return this.store.write(() =>
      this.store.db.insert(accounts).values({ ...account, updatedAt: account.createdAt }).returning().get(),
    )
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
