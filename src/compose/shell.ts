/**
 * `berth sites shell`: the admin's shell (domain/sites/admin-shell.ts) with what it needs of
 * the core (the store, the sites, the Docker runtime of this box's instance) and the audit trail,
 * with no listener, job runner or background pass started: `berth serve` may be running beside.
 */
import type { Config } from '../config/config'
import { AuditLog, makeAuditRepository } from '../domain/audit'
import { AdminShell } from '../domain/sites'
import { SITE_HOME } from '../drivers/runtime/site-container'
import type { Logger } from '../lib/logger'
import { buildCore } from './core'

export function buildAdminShell(config: Config, log: Logger): { shell: AdminShell; close(): void } {
  const core = buildCore(config, { log })
  const audit = new AuditLog(makeAuditRepository(core.store), core.clock, log)
  return {
    shell: new AdminShell({ sites: core.repos.sites, runtime: core.runtime, audit, home: SITE_HOME }),
    close: () => core.store.close(),
  }
}
