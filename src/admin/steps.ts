/**
 * A step of a long admin operation (domain/cluster/steps.ts, domain/offsite's OffsiteStep) as
 * the progress line the command prints: one line per step, its figures in it, a node step's site
 * slug first (a drain or an evacuation moves several). The line goes on the wire beside the step itself ({"progress", "step"}), so a
 * --json reader has both (docs/cluster.md, "What a move prints").
 */
import type { AdminStep } from './protocol'

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

function size(bytes: number | null): string {
  if (bytes === null) return 'size unknown'
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`
}

export function stepLine(s: AdminStep): string {
  switch (s.step) {
    case 'copy_sent': return `  copied ${s.key} (${size(s.bytes)}, ${seconds(s.ms)})`
    case 'copy_deleted': return `  deleted ${s.key} (retention let it go)`
    case 'store_copied': return `  store copied, manifest ${s.manifest ?? 'none'} (${seconds(s.ms)})`
    default: return nodeStepLine(s)
  }
}

function nodeStepLine(s: Exclude<AdminStep, { step: 'copy_sent' | 'copy_deleted' | 'store_copied' }>): string {
  const line = (text: string) => `  ${s.slug}: ${text}`
  switch (s.step) {
    case 'image_carried': return line(`image ${s.image} carried to ${s.node} (${seconds(s.ms)}), the site serving meanwhile`)
    case 'backup_taken': return line(`backup taken (archive ${s.archive}, ${size(s.bytes)}, ${seconds(s.ms)})`)
    case 'stopped': return line(`stopped${s.from ? ` on ${s.from}` : ''}, pinned to ${s.to}; the edge answers its "being brought back" page`)
    case 'volume_made': return line(`volume made on ${s.node}`)
    case 'databases_carried': return line(`${s.databases} database(s) carried to ${s.node} (${size(s.bytes)}, ${seconds(s.ms)})`)
    case 'files_restored': return line(`files restored on ${s.node} (${size(s.bytes)}, ${seconds(s.ms)})`)
    case 'started': return line(`started on ${s.node}, answering there`)
    case 'serving': return line(s.edge_serves === false
      ? `answers on ${s.node}, but berth serve's edge does not serve it yet (${seconds(s.outage_ms)} without service so far)`
      : `serving from ${s.node} (did not serve for ${seconds(s.outage_ms)})`)
    case 'old_volume_removed': return line(s.removed ? `old volume removed from ${s.node}` : `old volume on ${s.node} NOT removed (berth serve's log says why; remove it by hand)`)
    case 'evacuating': return line(`coming back on ${s.to} ${s.archive ? `from archive ${s.archive} (data from ${s.data_from})` : 'with an empty home (no archive found)'}`)
    case 'evacuated': return line(s.result === 'failed' ? `NOT BACK: ${s.problem}` : `back on ${s.node}${s.result === 'empty' ? ', WITHOUT DATA' : ''}`)
    case 'moving': return line(`moving to ${s.to}`)
    case 'not_moved': return line(`NOT MOVED: ${s.problem}`)
  }
}
