/** The accounts area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { AccountAdmin } from './admin'
export type { AdminAccountView } from './admin'
export { AccountsService } from './service'
export { AccountDeleted, AccountView, BillingPortal, LanguageSchema } from './views'
export type { AccountCounts, AccountRecords } from './records'
