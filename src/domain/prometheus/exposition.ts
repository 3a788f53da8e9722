/**
 * Prometheus's text exposition format, version 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/): `# HELP` and `# TYPE` lines,
 * then one sample per line, `name{label="value",...} value`. Written here rather than with
 * prom-client: Berth's metrics are read from counters it already keeps and from the store at
 * scrape time, never registered and updated through a client library, so all that is needed is
 * the writer (about 60 lines) and none of prom-client's registry, default collectors or timers.
 */

/** The media type of the format, for Content-Type. */
export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

export type Labels = Readonly<Record<string, string>>

export interface Sample {
  labels?: Labels
  value: number
}

/** A histogram's state for one label set: counts per upper bound (not cumulative), their sum. */
export interface HistogramSample {
  labels?: Labels
  /** Upper bounds, ascending; +Inf is added. */
  bounds: readonly number[]
  /** Observations per bound (`counts[i]` fell in `(bounds[i-1], bounds[i]]`); one more for above the last. */
  counts: readonly number[]
  sum: number
}

export type MetricFamily =
  | { name: string; help: string; type: 'counter' | 'gauge'; samples: readonly Sample[] }
  | { name: string; help: string; type: 'histogram'; samples: readonly HistogramSample[] }

/**
 * The families as one exposition document, in the order given. A family without samples keeps
 * its HELP and TYPE lines (a scraper then knows the name exists, with no series yet).
 *
 * @example
 * renderExposition([{ name: 'berth_sites', help: 'Sites by status.', type: 'gauge', samples: [{ labels: { status: 'active' }, value: 3 }] }])
 * // '# HELP berth_sites Sites by status.\n# TYPE berth_sites gauge\nberth_sites{status="active"} 3\n'
 */
export function renderExposition(families: readonly MetricFamily[]): string {
  const lines: string[] = []
  for (const f of families) {
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`)
    if (f.type === 'histogram') {
      for (const h of f.samples) lines.push(...histogramLines(f.name, h))
    } else {
      for (const s of f.samples) lines.push(`${f.name}${labelText(s.labels)} ${numberText(s.value)}`)
    }
  }
  return lines.length ? `${lines.join('\n')}\n` : ''
}

/** A histogram's `_bucket` lines (cumulative, ending at +Inf), then `_sum` and `_count`. */
function histogramLines(name: string, h: HistogramSample): string[] {
  const out: string[] = []
  let cumulative = 0
  h.bounds.forEach((bound, i) => {
    cumulative += h.counts[i] ?? 0
    out.push(`${name}_bucket${labelText({ ...h.labels, le: numberText(bound) })} ${cumulative}`)
  })
  cumulative += h.counts[h.bounds.length] ?? 0
  out.push(`${name}_bucket${labelText({ ...h.labels, le: '+Inf' })} ${cumulative}`)
  out.push(`${name}_sum${labelText(h.labels)} ${numberText(h.sum)}`, `${name}_count${labelText(h.labels)} ${cumulative}`)
  return out
}

function labelText(labels: Labels | undefined): string {
  if (!labels) return ''
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabelValue(v)}"`)
  return parts.length ? `{${parts.join(',')}}` : ''
}

/** A sample value: integers as such, +Inf, -Inf and NaN as the format spells them. */
export function numberText(n: number): string {
  if (Number.isNaN(n)) return 'NaN'
  if (n === Infinity) return '+Inf'
  if (n === -Infinity) return '-Inf'
  return String(n)
}

/** In a label value, backslash, double quote and line feed are escaped. */
export function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
}

/** In HELP text, backslash and line feed are escaped (quotes are not). */
function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')
}
