/** The room area as others see it (docs/architecture.md, "Areas are modules"): the box's free space against the reserve Berth keeps for itself. */
import type { Store } from '../../store/store'
import { RoomRepository } from './repository'
export { BoxRoom, GIB, sizeText, thresholdOf, type BoxRoomDeps, type DiskFigures, type RoomFigures, type RoomSettings } from './room'

/** The sum of the plans' disk_gb of the existing sites, read again only when the sites or plans changed. */
export function sitesDiskGbOf(store: Store): () => number {
  const repo = new RoomRepository(store)
  const version = store.versionOf(['sites', 'plans'])
  let seen = -1
  let gb = 0
  return () => {
    const v = version()
    if (v !== seen) {
      gb = repo.sitesDiskGb()
      seen = v
    }
    return gb
  }
}
