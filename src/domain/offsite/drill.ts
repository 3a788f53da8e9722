import type { OffsiteDestination } from '../../drivers/offsite/types'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { BoxIdentity, Sealing } from './ports'
import { reasonOf } from './ports'
import type { OffsiteCopiesRepository } from './repository'
import { digestOf } from './streams'

const DAY_MS = 24 * 60 * 60 * 1000

export interface DrillResult {
  key: string
  archiveId: string | null
  /** null: the copy came back whole; else what was wrong. */
  error: string | null
}

/**
 * The restore drill (issue 25, item 5): once a day one copied archive, picked at random, is
 * downloaded, opened with the box's own identity and hashed, and the digest and size compared
 * with those recorded when it was copied. No restore: it proves the copy can be read back before
 * anyone needs it. The result goes on the copy's row (verified_at, verify_error: `berth offsite
 * status`) and to the log (an error when it failed).
 */
export class RestoreDrill {
  constructor(private d: {
    repo: OffsiteCopiesRepository
    destination: OffsiteDestination
    sealing: Sealing
    identity: BoxIdentity
    clock: Clock
    log: Logger
  }) {}

  /** Due when no drill ran in the last day (or none is on record). */
  due(now: number): boolean {
    const last = this.d.repo.lastDrilled()
    return !last || now - last.verifiedAt! >= DAY_MS
  }

  /** Runs one drill; null when no archive is copied yet. Never throws. */
  async run(): Promise<DrillResult | null> {
    const row = this.d.repo.randomCopiedArchive()
    if (!row) return null
    const started = this.d.clock.now()
    let error: string | null
    try {
      const opened = await this.d.sealing.open(await this.d.destination.get(row.key), [await this.d.identity.identity()])
      const got = await digestOf(opened)
      error = got.sha256 === row.sha256 && got.bytes === row.bytes
        ? null
        : `it came back as ${got.bytes} bytes with SHA-256 ${got.sha256}; ${row.bytes} bytes with ${row.sha256} were copied`
    } catch (err) {
      error = `it could not be read back: ${reasonOf(err)}`
    }
    this.d.repo.recordDrill(row.id, this.d.clock.now(), error)
    const fields = { key: row.key, archive: row.archiveId, bytes: row.bytes, ms: this.d.clock.now() - started }
    if (error) this.d.log.error(`the restore drill found a copy off the box that is not what was copied: ${error}`, fields)
    else this.d.log.info('the restore drill read a copy back whole', fields)
    return { key: row.key, archiveId: row.archiveId, error }
  }
}
