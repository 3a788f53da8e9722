import { Type as t, type Static } from '@sinclair/typebox'
import { ArchiveKindSchema, VisibleArchiveStatusSchema } from '../../core/enums'
import { DateTime, Nullable, Uuid } from '../schema'

/** A snapshot or a backup as the API shows it. */
export const Archive = t.Object({
  id: Uuid(),
  kind: t.Union(ArchiveKindSchema.anyOf, { description: 'snapshot: taken on request (vps and dedicated); backup: the automatic daily one (every plan, 7 kept).' }),
  status: t.Union(VisibleArchiveStatusSchema.anyOf, {
    description: 'creating: being made (poll until ready or failed); ready: can be restored; restoring: being put back on the site (ready again after, with restored_at); failed: never made, see error.',
  }),
  size_bytes: Nullable(t.Integer({ description: 'Size of the stored (compressed) archive; null until ready.' })),
  file_count: Nullable(t.Integer({ description: 'Files in the archive (regular files and hard links); null until ready.' })),
  created_at: DateTime(),
  completed_at: Nullable(DateTime('When it became ready or failed.')),
  restored_at: Nullable(DateTime('When it was last restored onto the site.')),
  error: Nullable(t.String({ description: 'Why it failed, or why its last restore failed.' })),
  copies: t.Array(t.Union([t.Literal('local'), t.Literal('offsite')]), {
    description: 'Where it is kept: `local` on the server (every archive that is ready), and `offsite` once its encrypted copy is off the server (when the hoster keeps copies off the box; it follows the same retention). Empty until ready.',
  }),
})
export type ArchiveView = Static<typeof Archive>
