import { eq, lte } from 'drizzle-orm'
import { certificates, type CertificateRow } from '../../store/schema'
import { onFirstUse } from '../../store/prepared'
import type { Store } from '../../store/store'

/** The columns of a certificate that site and domain views show. */
export type CertificateViewRow = Pick<CertificateRow, 'subject' | 'status' | 'names' | 'notAfter' | 'lastError'>

export class CertificatesRepository {
  constructor(private store: Store) {}

  /** Read for every list of site and domain views: prepared once (src/store/prepared.ts). */
  private ofSubjects = onFirstUse(() => this.store.sqlite.prepare<CertificateViewRow, [string]>(`
    SELECT c.subject, c.status, c.names, c.not_after AS notAfter, c.last_error AS lastError
    FROM json_each(?) j JOIN certificates c ON c.subject = j.value`))

  all(): CertificateRow[] {
    return this.store.db.select().from(certificates).all()
  }

  find(id: string): CertificateRow | undefined {
    return this.store.db.select().from(certificates).where(eq(certificates.id, id)).get()
  }

  /** The rows of the given subjects (one query for a list's worth of views). */
  bySubjects(subjects: string[]): CertificateViewRow[] {
    if (subjects.length === 0) return []
    return this.ofSubjects().all(JSON.stringify(subjects))
  }

  due(now: number): CertificateRow[] {
    return this.store.db.select().from(certificates).where(lte(certificates.nextAttemptAt, now)).all()
  }

  insert(row: CertificateRow): void {
    this.store.db.insert(certificates).values(row).run()
  }

  update(id: string, set: Partial<CertificateRow>): void {
    this.store.db.update(certificates).set(set).where(eq(certificates.id, id)).run()
  }

  remove(id: string): void {
    this.store.db.delete(certificates).where(eq(certificates.id, id)).run()
  }
}
