/**
 * The database runtime's errors (the domain may import this file: drivers/databases/errors).
 * Engine down is drivers/runtime/types' RuntimeUnavailableError, as for sites.
 */

/** The server did not come up, or did not answer a query as its user in time; `logs` is its own last words. */
export class DatabaseStartError extends Error {
  constructor(message: string, readonly logs: string) {
    // The message ends with the server's last words: the reason a failed database shows.
    const last = logs.trim().split('\n').filter((l) => l.trim()).slice(-3).join(' / ')
    super(last ? `${message} Its log ends: ${last.slice(-600)}` : message)
    this.name = 'DatabaseStartError'
  }
}

/** A dump, a restore or a password change that the server or its tool refused; `output` is the tool's. */
export class DatabaseCommandError extends Error {
  constructor(message: string, readonly output: string) {
    super(message)
    this.name = 'DatabaseCommandError'
  }
}
