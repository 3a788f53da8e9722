/**
 * The audit trail of commands run in sites (issue 26): every exec of the API, every console
 * session and every admin shell, who ran it, when, for how long and how it ended. The site's
 * owner reads it with `GET /sites/{tenant_slug}/logs/?type=audit`. A record is written when the
 * command starts (so a crash still leaves it) and completed when it ends.
 */
export type AuditKind = 'exec' | 'console' | 'shell' | 'database'

/** Who ran it: an API key (its id and prefix), or the admin on the box. */
export type AuditActor = { kind: 'key'; keyId: string; keyPrefix: string } | { kind: 'admin'; user: string }

export interface AuditStart {
  siteId: string
  kind: AuditKind
  actor: AuditActor
  /** The command line as given (argv joined with spaces, quoted where needed; the string as sent); null for an interactive shell. */
  command: string | null
  /** Whom it runs as in the container: the site user (the default), or root (the admin's `berth sites shell --user root`). */
  runAs?: 'site' | 'root'
}

export interface AuditEnd {
  /** The exit code; null when there was none (a console closed from outside, a crash). */
  exitCode: number | null
  /** Why it ended when not by itself, in a few words: 'timed out', 'key revoked', 'idle 15 min', 'site suspended'. */
  reason?: string
}

export interface AuditRecord {
  /** Records the end (once; later calls do nothing). */
  end(outcome: AuditEnd): void
}

export interface AuditTrail {
  /** Records the start of a command or session, now. */
  begin(start: AuditStart): AuditRecord
}
