import { accounts, type AccountRow } from '../../store/schema'
import type { Store } from '../../store/store'

export class AccountsRepository {
  constructor(private store: Store) {}

  insert(account: { id: string; email: string | null; name: string; createdAt: number }): AccountRow {
    return this.store.write(() =>
      this.store.db.insert(accounts).values({ ...account, updatedAt: account.createdAt }).returning().get(),
    )
  }
}
