import { Type as t, type Static } from '@sinclair/typebox'
import { DateTime } from '../schema'
import { FILE_LIMITS } from './limits'

export const FileEntry = t.Object({
  name: t.String({ examples: ['index.html'], description: "The entry's own name; '' for the home itself." }),
  path: t.String({ description: 'Relative to the home, with / separators.' }),
  type: t.Union([t.Literal('file'), t.Literal('dir'), t.Literal('symlink'), t.Literal('other')], {
    description: 'other: a FIFO, socket or device node, listed but never opened. Symlinks are listed, never followed.',
  }),
  size: t.Integer({ description: 'Bytes (for a symlink, the length of its target).' }),
  modified_at: DateTime(),
  mode: t.String({ pattern: '^[0-7]{4}$', examples: ['0644'], description: 'Permission bits in octal, such as 0644.' }),
})

export const FileListing = t.Object({
  path: t.String({ description: 'The folder listed, normalised.' }),
  entries: t.Array(FileEntry, { description: `Sorted by name; at most ${FILE_LIMITS.listEntries}.` }),
  truncated: t.Boolean({ description: `True when the folder holds more than ${FILE_LIMITS.listEntries} entries.` }),
})

export const FileContent = t.Object({ ...FileEntry.properties, content: t.String({ description: 'The file as UTF-8 text.' }) })

export const WrittenEntry = t.Object({
  ...FileEntry.properties,
  created: t.Boolean({ description: 'False when the file or folder already existed (replaced, or left as it was by mkdir).' }),
})

export const DeletedEntry = t.Object({
  path: t.String(),
  type: t.Union([t.Literal('file'), t.Literal('dir')]),
  removed: t.Integer({ description: 'Entries removed, the path itself included.' }),
})
export type FileEntryView = Static<typeof FileEntry>
