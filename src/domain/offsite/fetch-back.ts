import type { ArchiveStore } from '../../drivers/archives/types'
import type { OffsiteDestination } from '../../drivers/offsite/types'
import type { ArchiveRow } from '../../store/schema'
import { offsiteKeys } from './manifest'
import type { BoxIdentity, Sealing } from './ports'
import type { OffsiteCopiesRepository } from './repository'
import type { RestoreFiles } from './restore'

/** Where an archive's bytes were found for a restore: on this box, brought back from off the box, or nowhere. */
export type ArchiveSource = 'local' | 'offsite' | 'missing'

/** Makes sure an archive's bytes are in the local archive store before a restore (domain/cluster's evacuation). */
export interface ArchiveBytes {
  ensureLocal(archive: Pick<ArchiveRow, 'id' | 'storageKey'>): Promise<ArchiveSource>
}

export interface ArchiveFetchBackDeps {
  /** The local archive store, where the archive is looked for and put back. */
  archives: Pick<ArchiveStore, 'list' | 'put'>
  /** The copies off the box; null when `offsite.url` is empty (then a missing archive stays missing). */
  offsite: {
    repo: Pick<OffsiteCopiesRepository, 'copiedArchives'>
    destination: Pick<OffsiteDestination, 'get'>
    sealing: Pick<Sealing, 'open'>
    identity: Pick<BoxIdentity, 'identity'>
    /** A work folder for what comes back (drivers/offsite/landing.ts). */
    files: Pick<RestoreFiles, 'receive' | 'discard'>
  } | null
}

/**
 * An archive whose bytes are not on this box (its disk was lost with the node that held the
 * archive store, or they were removed by hand) comes back from its copy off the box, opened with
 * the box's own identity (every copy is sealed for it, as the daily drill reads it) and checked
 * against the digest recorded when it was copied, before it takes its place in the local store.
 */
export class ArchiveFetchBack implements ArchiveBytes {
  constructor(private d: ArchiveFetchBackDeps) {}

  async ensureLocal(archive: Pick<ArchiveRow, 'id' | 'storageKey'>): Promise<ArchiveSource> {
    const key = archive.storageKey
    if (!key) return 'missing'
    const folder = key.slice(0, key.lastIndexOf('/') + 1)
    if ((await this.d.archives.list(folder)).includes(key)) return 'local'
    const off = this.d.offsite
    if (!off) return 'missing'
    const copy = off.repo.copiedArchives().find((c) => c.archiveId === archive.id)
    if (!copy) return 'missing'
    const plain = await off.sealing.open(await off.destination.get(offsiteKeys.archive(key)), [await off.identity.identity()])
    const received = await off.files.receive(plain, `fetch-${archive.id}.tar.zst`)
    try {
      if (received.sha256 !== copy.sha256 || received.bytes !== copy.bytes) {
        throw new Error(`the copy off the box of archive ${archive.id} is not what was copied (${received.bytes} bytes, ${copy.bytes} expected)`)
      }
      await this.d.archives.put(key, received.file)
    } finally {
      await off.files.discard(received.file)
    }
    return 'offsite'
  }
}
