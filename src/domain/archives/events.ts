import type { ArchiveRow } from '../../store/schema'

/** What is told of an archive's life (the copies off the box follow it: domain/offsite). */
export interface ArchiveListener {
  /** It turned ready: its bytes are in the archive store under `storageKey`. */
  ready(row: ArchiveRow): void
  /** It is being removed (its row is `deleted`, its file goes next). */
  discarded(row: ArchiveRow): void
}

/**
 * Tells whoever keeps something per archive that one turned ready or is being removed. Told
 * after the store says so, outside its transaction: a listener that missed one (a crash between)
 * must find it again on its own pass. Listeners must be quick and must not throw.
 */
export class ArchiveEvents implements ArchiveListener {
  private listeners: ArchiveListener[] = []

  subscribe(listener: ArchiveListener): void {
    this.listeners.push(listener)
  }

  ready(row: ArchiveRow): void {
    this.tell((l) => l.ready(row))
  }

  discarded(row: ArchiveRow): void {
    this.tell((l) => l.discarded(row))
  }

  private tell(call: (listener: ArchiveListener) => void): void {
    for (const listener of this.listeners) {
      try {
        call(listener)
      } catch {
        // a listener's fault is its own
      }
    }
  }
}
