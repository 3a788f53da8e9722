import type { OffsiteCopyRow } from '../../store/schema'

const DAY_MS = 24 * 60 * 60 * 1000

/**
 * Which copies of the store, the tls folder and manifests to keep off the box (archive copies
 * follow the local archives instead). Of each kind, among those `copied`:
 * - every one made in the last 24 hours;
 * - the newest of each UTC day for the last `days` days (`archives.backups_kept`, so the box can
 *   be rebuilt as of any day a backup of a site is kept for);
 * - the newest, however old: a box whose copies failed for a week still has its last good one
 *   (and the tls copy, made only when the folder changed, is the one every new manifest names);
 * and, whatever their age, the store and tls copies a kept manifest names.
 * Returns the ids of those to let go.
 */
export function boxCopiesToDrop(rows: OffsiteCopyRow[], now: number, days: number): string[] {
  const copied = rows.filter((r) => r.status === 'copied' && r.kind !== 'archive')
  const keep = new Set<string>()
  for (const kind of ['store', 'tls', 'manifest'] as const) {
    const ofKind = copied.filter((r) => r.kind === kind).sort((a, b) => b.madeAt - a.madeAt)
    if (ofKind[0]) keep.add(ofKind[0].id)
    const daysSeen = new Set<string>()
    for (const row of ofKind) {
      if (now - row.madeAt < DAY_MS) keep.add(row.id)
      const day = new Date(row.madeAt).toISOString().slice(0, 10)
      if (now - row.madeAt < days * DAY_MS && !daysSeen.has(day)) {
        daysSeen.add(day)
        keep.add(row.id)
      }
    }
  }
  const named = new Set<string>()
  for (const m of copied) if (m.kind === 'manifest' && keep.has(m.id)) for (const key of refsOf(m)) named.add(key)
  return copied.filter((r) => !keep.has(r.id) && !named.has(r.key)).map((r) => r.id)
}

/** The keys a manifest's row says it names. */
export function refsOf(row: OffsiteCopyRow): string[] {
  if (!row.refs) return []
  try {
    const refs = JSON.parse(row.refs) as unknown
    return Array.isArray(refs) ? refs.filter((r): r is string => typeof r === 'string') : []
  } catch {
    return []
  }
}
