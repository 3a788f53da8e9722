import { insufficientStorage, op, say } from '../errors'

export const GIB = 1024 ** 3

/** What statfs says of a filesystem: bytes free for an unprivileged writer, and its size. */
export interface DiskFigures {
  freeBytes: number
  totalBytes: number
}

/** The reserve Berth keeps (config `disk.reserve_bytes`, `disk.reserve_percent`): the larger of the two holds. */
export interface RoomSettings {
  reserveBytes: number
  reservePercent: number
}

/** The box's room as GET /status/, /metrics and berth doctor show it. */
export interface RoomFigures extends DiskFigures {
  /** The free space under which Berth refuses what would grow its own disk use. */
  thresholdBytes: number
  /** Free space is under the threshold: new sites, snapshots and backups are refused. */
  low: boolean
  /** The sum of the plans' `disk_gb` of the sites that exist: what the box has promised. */
  sitesDiskGb: number
}

/** The free space under which Berth refuses growth, for a filesystem of `totalBytes`. */
export function thresholdOf(settings: RoomSettings, totalBytes: number): number {
  return Math.max(settings.reserveBytes, Math.ceil((totalBytes * settings.reservePercent) / 100))
}

/** Bytes as a hoster reads them: `4.2 GiB`, `870 MiB`. */
export function sizeText(bytes: number): string {
  if (bytes >= GIB) return `${(bytes / GIB).toFixed(1)} GiB`
  return `${Math.round(bytes / 1024 ** 2)} MiB`
}

export interface BoxRoomDeps {
  /** statfs of the data folder, read at each call (a syscall: microseconds). */
  disk: () => DiskFigures
  settings: RoomSettings
  /** The sum of the plans' disk_gb of the existing sites (RoomRepository, cached on the store's version). */
  sitesDiskGb: () => number
}

/**
 * The room the box keeps for itself (issue 38, item 4): Berth's own data (the store, archives,
 * certificates) lives on the data folder's filesystem, which sites may fill. Under the reserve,
 * what would grow Berth's own disk use a lot (a new site, a snapshot, a backup) is refused with
 * 507; everything that exists keeps working. Read at the moment of each request: no cache, so
 * room made again is seen at once.
 */
export class BoxRoom {
  constructor(private d: BoxRoomDeps) {}

  figures(): RoomFigures {
    const disk = this.d.disk()
    const thresholdBytes = thresholdOf(this.d.settings, disk.totalBytes)
    return { ...disk, thresholdBytes, low: disk.freeBytes < thresholdBytes, sitesDiskGb: this.d.sitesDiskGb() }
  }

  /** Whether free space is under the reserve now (the maintenance pass holds backups back while it is). */
  isLow(): boolean {
    const disk = this.d.disk()
    return disk.freeBytes < thresholdOf(this.d.settings, disk.totalBytes)
  }

  /** Throws 507 insufficient_storage when the box is under its reserve; `what` names the refused thing ("a new site"). */
  ensureRoom(what: string): void {
    const disk = this.d.disk()
    const threshold = thresholdOf(this.d.settings, disk.totalBytes)
    if (disk.freeBytes >= threshold) return
    throw insufficientStorage(say`The server is low on disk space (${sizeText(disk.freeBytes)} free, under the ${sizeText(threshold)} it keeps for itself), so it takes no ${what} until its hoster frees space; existing sites keep working. Retry later, or ask the hoster (${op('getStatus')} shows disk.low_space).`)
  }
}
