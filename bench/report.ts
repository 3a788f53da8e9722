/** The printed summary and the JSON file written with --json. */
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import type { Contention } from './cpu-contention'
import { median } from './stats'
import type { ComparisonResult } from './throughput'

export interface StartupSummary {
  medianMs: number
  maxMs: number
  samplesMs: number[]
}

export interface StartupFigures {
  runs: number
  fresh: StartupSummary
  existing: StartupSummary
  maxMedianMs: number
  pass: boolean
}

export interface MemoryFigures {
  idleRssMb: number
  afterLoadRssMb: number
  maxIdleRssMb: number
  pass: boolean
}

export interface ContentionFigures {
  /** Median and max over the measured wrk runs: other processes' CPU share, then steal. */
  load: { otherMedianPercent: number; otherMaxPercent: number; stealMedianPercent: number; stealMaxPercent: number }
  /** Over the start-up timing. */
  startup: Contention
}

export interface Report {
  date: string
  machine: { cpus: number; cpuModel: string; bun: string; commit: string; binary: string }
  wrk: { connections: number; threads: number; warmupSeconds: number; durationSeconds: number; rounds: number }
  comparisons: ComparisonResult[]
  startup: StartupFigures
  memory: MemoryFigures
  contention: ContentionFigures
  pass: boolean
}

const verdict = (pass: boolean) => (pass ? 'PASS' : 'FAIL')
const ms = (v: number) => `${v.toFixed(2)} ms`
const pct = (v: number) => (Number.isNaN(v) ? 'unknown' : `${v.toFixed(0)}%`)
const rps = (v: number) => Math.round(v).toLocaleString('en-US')

export function formatReport(r: Report): string {
  const throughput = formatTable(
    ['Route', 'Berth req/s', 'Bare req/s', 'Ratio', 'Berth p50', 'Berth p99', 'Bare p50', 'Bare p99', 'Target', 'Result'],
    r.comparisons.map((c) => [
      `GET ${c.berthRoute}`,
      rps(c.berth.requestsPerSec),
      rps(c.reference.requestsPerSec),
      c.ratio.toFixed(2),
      ms(c.berth.p50Ms),
      ms(c.berth.p99Ms),
      ms(c.reference.p50Ms),
      ms(c.reference.p99Ms),
      comparisonTarget(c),
      verdict(c.pass),
    ]),
  )
  const startup = formatTable(
    ['Measure', 'Median', 'Max', 'Target', 'Result'],
    [
      [`Start-up, fresh data dir (${r.startup.runs} runs)`, ms(r.startup.fresh.medianMs), ms(r.startup.fresh.maxMs), `median < ${r.startup.maxMedianMs} ms`, verdict(r.startup.fresh.medianMs < r.startup.maxMedianMs)],
      [`Start-up, existing data dir (${r.startup.runs} runs)`, ms(r.startup.existing.medianMs), ms(r.startup.existing.maxMs), `median < ${r.startup.maxMedianMs} ms`, verdict(r.startup.existing.medianMs < r.startup.maxMedianMs)],
      ['Idle RSS', `${r.memory.idleRssMb.toFixed(1)} MB`, '', `< ${r.memory.maxIdleRssMb} MB`, verdict(r.memory.pass)],
      ['RSS after the load runs (for information)', `${r.memory.afterLoadRssMb.toFixed(1)} MB`, '', '', ''],
    ],
  )
  const errors = r.comparisons.flatMap((c) => c.errors)
  const warnings = r.comparisons.flatMap((c) => c.warnings)
  return [
    `Berth benchmarks, ${r.date}: ${r.machine.cpus} CPUs (${r.machine.cpuModel}), bun ${r.machine.bun}, commit ${r.machine.commit}`,
    `Binary: ${r.machine.binary}`,
    `wrk -t${r.wrk.threads} -c${r.wrk.connections}, ${r.wrk.warmupSeconds} s warm-up + ${r.wrk.durationSeconds} s measured, median of ${r.wrk.rounds} alternating rounds`,
    `Machine share taken by other processes / by the hypervisor (steal): median ${pct(r.contention.load.otherMedianPercent)} / ${pct(r.contention.load.stealMedianPercent)}, ` +
      `max ${pct(r.contention.load.otherMaxPercent)} / ${pct(r.contention.load.stealMaxPercent)} over the measured runs; ` +
      `${pct(r.contention.startup.otherPercent)} / ${pct(r.contention.startup.stealPercent)} during start-up timing`,
    '',
    throughput,
    '',
    startup,
    ...(errors.length > 0 ? ['', 'Errors (figures not comparable):', ...errors.map((e) => `  ${e}`)] : []),
    ...(warnings.length > 0 ? ['', 'Warnings:', ...warnings.map((w) => `  ${w}`)] : []),
    '',
    `Overall: ${verdict(r.pass)}`,
  ].join('\n')
}

function comparisonTarget(c: ComparisonResult): string {
  const ratio = `ratio ≥ ${c.minRatio}`
  return c.maxP99Ms === undefined ? ratio : `${ratio}, p99 < ${c.maxP99Ms} ms`
}

/** A plain-text table, columns padded to their widest cell; numbers right-aligned. */
function formatTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)))
  const numeric = /^[\d,.]+( ms| MB)?$/
  const line = (cells: string[]) =>
    cells.map((cell, i) => (numeric.test(cell) ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join('  ').trimEnd()
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}

export function writeJson(file: string, r: Report) {
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, `${JSON.stringify(r, null, 2)}\n`)
}

/** Median and max contention over every measured wrk run (both sides of every comparison). */
export function summarizeContention(comparisons: ComparisonResult[], startup: Contention): ContentionFigures {
  const runs = comparisons.flatMap((c) => c.rounds.flatMap((r) => [r.reference.contention, r.berth.contention]))
  const known = (values: number[]) => values.filter((v) => !Number.isNaN(v))
  const other = known(runs.map((c) => c.otherPercent))
  const steal = known(runs.map((c) => c.stealPercent))
  const med = (v: number[]) => (v.length > 0 ? median(v) : Number.NaN)
  const max = (v: number[]) => (v.length > 0 ? Math.max(...v) : Number.NaN)
  return {
    load: { otherMedianPercent: med(other), otherMaxPercent: max(other), stealMedianPercent: med(steal), stealMaxPercent: max(steal) },
    startup,
  }
}
