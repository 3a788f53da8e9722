/** The databases area as others see it (docs/architecture.md, "Areas are modules"): the sites' managed databases (issue 40). */
export type { DatabaseRuntime, DatabaseRunning, DatabaseSpec, DatabaseState, DbEngine } from './ports'
