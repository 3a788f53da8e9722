import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { OFFSITE_COPY_KINDS, OFFSITE_COPY_STATUSES } from '../../core/enums'

/**
 * The copies Berth means to have off the box (issue 25; docs/operations.md, "Copies off the box"):
 * one row per object under `offsite.url`. A copy is a row before it is an object: `pending` until
 * its put succeeded (a kill -9 mid-copy leaves it pending, and the copier puts it again from
 * scratch: puts are atomic and idempotent), `copied` after, `deleting` once retention let it go
 * (the row goes when the object is gone). The copier (domain/offsite/copier.ts) is the only writer.
 */
export const offsiteCopies = sqliteTable('offsite_copies', {
  id: text('id').primaryKey(),
  /** archive (a backup or snapshot), store (the SQLite store), tls (certificates and ACME account), manifest. */
  kind: text('kind', { enum: OFFSITE_COPY_KINDS }).notNull(),
  /** The object's key under the destination's prefix (domain/offsite/manifest.ts, offsiteKeys). */
  key: text('key').notNull(),
  /** The archive an `archive` copy is of (archives.id); null for the other kinds. */
  archiveId: text('archive_id'),
  /** pending, copied, deleting. */
  status: text('status', { enum: OFFSITE_COPY_STATUSES }).notNull(),
  /** Hex SHA-256 and size of the plaintext (before sealing); null until copied. */
  sha256: text('sha256'),
  bytes: integer('bytes'),
  /** A manifest's: the keys of the store and tls copies it names (JSON list), kept while it is. */
  refs: text('refs'),
  /** When what is copied was made: the archive's completion, the store copy's moment. */
  madeAt: integer('made_at').notNull(),
  copiedAt: integer('copied_at'),
  /** Failed puts (or deletes) in a row; the back-off grows with them. */
  attempts: integer('attempts').notNull().default(0),
  nextAttemptAt: integer('next_attempt_at').notNull(),
  /** When the last put or delete was tried, and why it failed (null once it worked). */
  attemptedAt: integer('attempted_at'),
  lastError: text('last_error'),
  /** The restore drill's last reading of this copy: when, and what was wrong (null: it matched). */
  verifiedAt: integer('verified_at'),
  verifyError: text('verify_error'),
}, (t) => [
  uniqueIndex('offsite_copies_key').on(t.key),
  index('offsite_copies_due').on(t.status, t.nextAttemptAt),
  index('offsite_copies_kind').on(t.kind, t.status, t.madeAt),
  index('offsite_copies_archive').on(t.archiveId),
])

export type OffsiteCopyRow = typeof offsiteCopies.$inferSelect
