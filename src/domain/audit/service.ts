import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import { auditLine } from './lines'
import type { AuditCursor, AuditRepository } from './repository'
import type { AuditEnd, AuditKind, AuditRecord, AuditStart, AuditTrail } from './trail'

/** How long records are kept (docs/operations.md, "The audit trail"). */
export const AUDIT_RETENTION_DAYS = 90
/** At most this many records per site are kept, the newest: a site running commands in a loop cannot fill the store. */
export const AUDIT_MAX_PER_SITE = 100_000
/** A command line is kept to its first this-many bytes (UTF-8), with its whole size. */
export const AUDIT_COMMAND_BYTES = 4096
/** Retention runs at most this often (the maintenance pass calls `prune` every 30 s). */
const PRUNE_EVERY_MS = 60 * 60_000
/** Records read from the store at a time while looking for matching lines. */
const PAGE = 500
const DAY_MS = 86_400_000

/**
 * The audit trail on the store: `begin` writes the record before the command starts (so a
 * crash leaves it, `open`), and its `end` completes it once. The site's owner reads it as log
 * lines (`lines`, domain/logs/service.ts); records go after AUDIT_RETENTION_DAYS, beyond
 * AUDIT_MAX_PER_SITE per site, and with the site when it is reaped (`removeAllFor`).
 */
export class AuditLog implements AuditTrail {
  private prunedAt = -Infinity

  constructor(
    private repo: AuditRepository,
    private clock: Clock,
    private log: Logger,
    /** How long, and how many per site, records are kept. */
    private keep = { days: AUDIT_RETENTION_DAYS, perSite: AUDIT_MAX_PER_SITE },
  ) {}

  begin(start: AuditStart): AuditRecord {
    const id = crypto.randomUUID()
    const { command, commandBytes } = boundCommand(start.command)
    this.repo.insert({
      id, siteId: start.siteId, kind: start.kind, runAs: start.runAs ?? 'site', command, commandBytes, startedAt: this.clock.now(),
      ...(start.actor.kind === 'key' ? { actor: 'key', keyId: start.actor.keyId, keyPrefix: start.actor.keyPrefix } : { actor: 'admin', adminUser: start.actor.user }),
    })
    let ended = false
    return {
      end: (outcome: AuditEnd) => {
        if (ended) return
        ended = true
        try {
          this.repo.complete(id, { endedAt: this.clock.now(), exitCode: outcome.exitCode, reason: outcome.reason ?? null })
        } catch (err) {
          // The command has ended whatever the store says; the record stays open.
          this.log.error('audit: the end of a record could not be written', { id, error: (err as Error).message })
        }
      },
    }
  }

  /**
   * The site's newest `lines` records (auditLine), those containing `search` only when given,
   * oldest first.
   */
  lines(siteId: string, q: { lines: number; search?: string }): string[] {
    const found: string[] = []
    let after: AuditCursor | undefined
    while (found.length < q.lines) {
      const rows = this.repo.page(siteId, PAGE, after)
      for (const row of rows) {
        const line = auditLine(row)
        if (q.search === undefined || line.includes(q.search)) found.push(line)
        if (found.length === q.lines) break
      }
      if (rows.length < PAGE) break
      after = rows[rows.length - 1]
    }
    return found.reverse()
  }

  /**
   * Marks the open records of `kinds` started before `before` as over without an end: the
   * process that ran them is gone (`berth serve` starting again: no exec or console of the last
   * one still runs). They read `open reason="..."`.
   */
  markLost(kinds: AuditKind[], before: number, reason: string): number {
    return this.repo.markLost(kinds, before, reason)
  }

  /** Retention, at most hourly: records older than AUDIT_RETENTION_DAYS, and each site's beyond AUDIT_MAX_PER_SITE. */
  prune(): void {
    const now = this.clock.now()
    if (now - this.prunedAt < PRUNE_EVERY_MS) return
    this.prunedAt = now
    try {
      let removed = this.repo.deleteStartedBefore(now - this.keep.days * DAY_MS)
      for (const siteId of this.repo.sitesOver(this.keep.perSite)) removed += this.repo.keepNewest(siteId, this.keep.perSite)
      if (removed > 0) this.log.info('audit records pruned', { removed })
    } catch (err) {
      // The next hour tries again; the rest of the maintenance pass goes on.
      this.log.error('audit: pruning failed', { error: (err as Error).message })
    }
  }

  /** A reaped site's records go with its other data (SiteDataPurger). */
  async removeAllFor(siteId: string): Promise<void> {
    this.repo.deleteAllFor(siteId)
  }
}

/** The command's first AUDIT_COMMAND_BYTES bytes, cut on a character's boundary, and its whole size when cut. */
export function boundCommand(command: string | null): { command: string | null; commandBytes: number | null } {
  if (command === null) return { command: null, commandBytes: null }
  const bytes = Buffer.from(command)
  if (bytes.length <= AUDIT_COMMAND_BYTES) return { command, commandBytes: null }
  let end = AUDIT_COMMAND_BYTES
  // A UTF-8 continuation byte (10xxxxxx) belongs to the character before it.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--
  return { command: bytes.subarray(0, end).toString('utf8'), commandBytes: bytes.length }
}
