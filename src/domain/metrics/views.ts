import { Type as t, type Static } from '@sinclair/typebox'
import { Nullable } from '../schema'

const Traffic = {
  requests: t.Integer(),
  bytes_out: t.Integer({ description: 'Response body bytes sent to visitors.' }),
  status_2xx: t.Integer(),
  status_3xx: t.Integer(),
  status_4xx: t.Integer({ description: 'Includes 499: the visitor went away before the answer.' }),
  status_5xx: t.Integer({ description: "Includes the edge's own 502/503/504 when the site did not answer." }),
  p50_ms: t.Number({ description: 'Median response time at the edge, first byte in to last byte out; 0 without requests.' }),
  p95_ms: t.Number(),
}

export const MetricsDay = t.Object({ date: t.String({ format: 'date', description: 'UTC day, YYYY-MM-DD.' }), ...Traffic })
export type MetricsDay = Static<typeof MetricsDay>

export const SiteMetrics = t.Object({
  from: t.String({ format: 'date' }),
  to: t.String({ format: 'date', description: 'Today (UTC).' }),
  days: t.Array(MetricsDay, { description: 'One entry per UTC day, oldest first; days without traffic are zeros.' }),
  totals: t.Object(Traffic, { description: 'The whole period; percentiles over all its requests.' }),
  current: t.Object({
    cpu_percent: Nullable(t.Number({ description: 'Percent of one core; null when the container is not running.' })),
    memory_bytes: Nullable(t.Integer()),
    memory_limit_bytes: Nullable(t.Integer()),
    disk_bytes: Nullable(t.Integer({ description: "Space the home (files, logs) takes: its disk's used space when the site has a disk of its own (issue 38), else a walk measured at most once a minute; null when the site has no volume." })),
    disk_limit_bytes: Nullable(t.Integer({ description: "The size of the site's disk, its plan's disk_gb in bytes (GiB); null when the runtime reports no disk for the site." })),
  }),
})
export type SiteMetrics = Static<typeof SiteMetrics>
