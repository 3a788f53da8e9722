import type { AccountRow } from '../../store/schema'

/**
 * What the domains area reads of accounts: the owner of a domain, to charge and to name it. The
 * accounts area sits above domains (deleting an account ends its domains), so domains declares the
 * one method it uses and the composition root hands it the accounts repository.
 */
export interface AccountLookup {
  find(id: string): AccountRow | undefined
}
