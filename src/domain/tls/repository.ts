import { eq, lte } from 'drizzle-orm'
import { certificates, type CertificateRow } from '../../store/schema'
import { inJsonList, onFirstUse } from '../../store/prepared'
import type { Store } from '../../store/store'

export class CertificatesRepository {
  constructor(private store: Store) {}

  /** Read for every list of site and domain views: prepared once (src/store/prepared.ts). */
  private ofSubjects = onFirstUse(() => this.store.db.select().from(certificates).where(inJsonList(certificates.subject, 'subjects')).prepare())

  all(): CertificateRow[] {
    return this.store.db.select().from(certificates).all()
  }

  find(id: string): CertificateRow | undefined {
    return this.store.db.select().from(certificates).where(eq(certificates.id, id)).get()
  }

  /** The rows of the given subjects (one query for a list's worth of views). */
  bySubjects(subjects: string[]): CertificateRow[] {
    if (subjects.length === 0) return []
    return this.ofSubjects().all({ subjects: JSON.stringify(subjects) })
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
