/** The console area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { CONSOLE_PATH, ConsoleService } from './service'
export { ConsoleSessions, inputOverflow } from './sessions'
export type { ConsoleSession, SessionPeer } from './sessions'
export { ConsoleTickets } from './tickets'
export type { ConsoleGrant } from './tickets'
export { ConsoleTicket } from './views'
