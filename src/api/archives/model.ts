import { t, type Static } from 'elysia'
import { DateTime, Nullable, Uuid } from '../http/schemas'
import { SiteParams } from '../sites/model'
import { Archive } from '../../domain/archives'
export { Archive }

export type ArchiveView = Static<typeof Archive>

export const SnapshotParams = t.Object({ ...SiteParams.properties, snapshot_id: Uuid() })
export const BackupParams = t.Object({ ...SiteParams.properties, backup_id: Uuid() })
