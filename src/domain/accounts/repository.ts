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

  /** Keeps `methodId` as the account's payment method on file. */
  setPaymentMethod(id: string, methodId: string, label: string, at: number): void {
    this.store.db.update(accounts).set({ paymentMethodId: methodId, paymentMethodLabel: label, updatedAt: at }).where(eq(accounts.id, id)).run()
  }
}
