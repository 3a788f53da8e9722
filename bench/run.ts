/**
 * `bun run bench`: measures the compiled binary against bare Bun.serve references and prints
 * ratios with PASS/FAIL against the targets, plus start-up time and idle memory.
 *
 *   bun run bench            full run (about 3 minutes); the figures in docs/benchmarks.md
 *   bun run bench --json     also writes bench/results/latest.json
 *   bun run bench --quick    1 round of 2 s runs, to check the harness itself; not for recording
 *   bun run bench --baseline <binary>
 *                            also runs another build (e.g. a copy of main's dist/berth) through the
 *                            same rounds, and prints this build's req/s over the baseline's
 *
 * `bun run bench:api` is the same command.
 *
 * Ratios, not absolute numbers, are the result: the machines are shared and noisy, and the
 * reference measured in the same run carries the same noise. Exits 1 if any target fails.
 */
import { spawnSync } from 'bun'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join, resolve } from 'node:path'
import { BINARY, ROOT, cleanup, cleanupOnExit, rssMb, snapshotBinary, startBerth, startReference, tempDir, type RunningBerth } from './processes'
import { formatReport, summarizeContention, writeJson, type Report } from './report'
import { measureIdleRss, measureStartup, startupSummary } from './startup'
import { median } from './stats'
import { runComparisons, type ComparisonResult } from './throughput'
import { WRK_SETTINGS, wrkInstalled } from './wrk'

const TARGETS = { whoamiRatio: 0.5, whoamiP99Ms: 5, plansRatio: 0.8, startupMs: 100, idleRssMb: 80 }
const IDLE_SECONDS = 3
const RESULTS_FILE = join(import.meta.dir, 'results', 'latest.json')

interface Options {
  json: boolean
  rounds: number
  startupRuns: number
  /** Another build measured in the same rounds (`--baseline <binary>`), or null. */
  baseline: string | null
}

function parseOptions(argv: string[]): Options {
  const known = new Set(['--json', '--quick'])
  const at = argv.indexOf('--baseline')
  const baseline = at === -1 ? null : resolve(argv[at + 1] ?? '')
  if (baseline !== null && (!argv[at + 1] || !existsSync(baseline))) {
    console.error(`--baseline needs the path of another build of berth; ${argv[at + 1] ? `${baseline} does not exist` : 'none was given'}`)
    process.exit(2)
  }
  const unknown = argv.filter((a, i) => !known.has(a) && !(at !== -1 && (i === at || i === at + 1)))
  if (unknown.length > 0) {
    console.error(`unknown option ${unknown.join(' ')}; usage: bun run bench [--json] [--quick] [--baseline <binary>]`)
    process.exit(2)
  }
  const quick = argv.includes('--quick')
  // Shortened in place so every run of this process, and the report, use the same settings.
  if (quick) Object.assign(WRK_SETTINGS, { warmupSeconds: 1, durationSeconds: 2 })
  return { json: argv.includes('--json'), rounds: quick ? 1 : 3, startupRuns: quick ? 3 : 10, baseline }
}

function ensurePrerequisites() {
  if (!wrkInstalled()) {
    console.error('wrk is not installed; install it with: apt-get install wrk')
    process.exit(1)
  }
  if (!existsSync(BINARY)) {
    console.log('dist/berth is missing; running bun run build')
    const build = spawnSync([process.execPath, 'run', 'build'], { cwd: ROOT, stdout: 'inherit', stderr: 'inherit' })
    if (build.exitCode !== 0) throw new Error('bun run build failed')
  }
}

/** Registers the one account of the run: registration is limited to 5 per hour per address. */
async function registerKey(url: string): Promise<string> {
  const res = await fetch(`${url}/api/v1/auth/register/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  })
  const body = (await res.json()) as { data?: { api_key?: string } }
  if (res.status !== 201 || !body.data?.api_key) throw new Error(`register answered ${res.status}: ${JSON.stringify(body)}`)
  return body.data.api_key
}

/** The `data` of a berth response, to give the reference server a body of the same shape and size. */
async function fetchData(url: string, headers: Record<string, string> = {}): Promise<unknown> {
  const res = await fetch(url, { headers })
  const body = (await res.json()) as { data?: unknown }
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${JSON.stringify(body)}`)
  return body.data
}

/**
 * whoami and plans on berth against their bare references, alternating, median of the rounds;
 * with a baseline build, the same two on it in the same rounds (its results follow
 * this build's two, targets not checked).
 */
async function measureThroughput(berth: RunningBerth, rounds: number, log: (line: string) => void, baseline: RunningBerth | null = null): Promise<ComparisonResult[]> {
  const auth = { authorization: `Bearer ${await registerKey(berth.url)}` }
  const baselineAuth: Record<string, string> = baseline ? { authorization: `Bearer ${await registerKey(baseline.url)}` } : {}
  const whoamiUrl = `${berth.url}/api/v1/auth/whoami/`
  const plansUrl = `${berth.url}/api/v1/plans/`
  const reference = await startReference({ whoami: await fetchData(whoamiUrl, auth), plans: await fetchData(plansUrl) })
  const ref = reference.proc.pid
  const own = berth.proc.pid
  log(`throughput: wrk -t${WRK_SETTINGS.threads} -c${WRK_SETTINGS.connections}, ${WRK_SETTINGS.warmupSeconds} s warm-up + ${WRK_SETTINGS.durationSeconds} s measured, ${rounds} rounds`)
  try {
    return await runComparisons(
      [
        {
          name: 'whoami',
          // The bare whoami gets the same Authorization header, so both sides parse identical requests.
          reference: { name: 'bare (whoami-like)', url: reference.whoamiUrl, headers: auth, pid: ref },
          berth: { name: 'berth whoami', url: whoamiUrl, headers: auth, pid: own },
          minRatio: TARGETS.whoamiRatio,
          maxP99Ms: TARGETS.whoamiP99Ms,
        },
        {
          name: 'plans',
          reference: { name: 'bare (plans-like)', url: reference.plansUrl, pid: ref },
          berth: { name: 'berth plans', url: plansUrl, pid: own },
          minRatio: TARGETS.plansRatio,
        },
        ...(baseline
          ? [
            { name: 'whoami (baseline)', reference: { name: 'bare (whoami-like)', url: reference.whoamiUrl, headers: auth, pid: ref }, berth: { name: 'baseline whoami', url: `${baseline.url}/api/v1/auth/whoami/`, headers: baselineAuth, pid: baseline.proc.pid }, minRatio: 0 },
            { name: 'plans (baseline)', reference: { name: 'bare (plans-like)', url: reference.plansUrl, pid: ref }, berth: { name: 'baseline plans', url: `${baseline.url}/api/v1/plans/`, pid: baseline.proc.pid }, minRatio: 0 },
          ]
          : []),
      ],
      rounds,
      log,
    )
  } finally {
    reference.proc.kill('SIGTERM')
    await reference.proc.exited
  }
}

/** This build's req/s over the baseline's, per route: the median of the per-round ratios (above 1 is faster). */
function againstBaseline(binary: string, mine: ComparisonResult[], theirs: ComparisonResult[]): string {
  const lines = [`this build / baseline ${binary} (req/s, median of the per-round ratios; above 1 is faster):`]
  for (const [i, c] of mine.entries()) {
    const base = theirs[i]!
    const ratios = c.rounds.map((r, round) => r.berth.requestsPerSec / base.rounds[round]!.berth.requestsPerSec)
    lines.push(`  ${c.name.padEnd(8)} ${median(ratios).toFixed(2)}   (per round ${ratios.map((r) => r.toFixed(2)).join(', ')}; vs bare: this ${c.ratio.toFixed(2)}, baseline ${base.ratio.toFixed(2)})`)
  }
  return lines.join('\n')
}

/** Where and on what the run happens; read before measuring, from the snapshot of the binary. */
function machine(binary: string): Report['machine'] {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8')
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? 'unknown'
  const git = (args: string[]) => spawnSync(['git', ...args], { cwd: ROOT }).stdout.toString().trim()
  const commit = git(['rev-parse', '--short', 'HEAD']) || 'unknown'
  const dirty = git(['status', '--porcelain']) !== ''
  const version = spawnSync([binary, 'version']).stdout.toString().trim()
  return {
    cpus: availableParallelism(),
    cpuModel: model,
    bun: Bun.version,
    commit: dirty ? `${commit} (uncommitted changes)` : commit,
    // The binary may be older than the working tree: `bun run build` is only run when it is missing.
    binary: `${version}, dist/berth built ${statSync(BINARY).mtime.toISOString()}`,
  }
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2))
  cleanupOnExit()
  ensurePrerequisites()
  const about = machine(snapshotBinary())
  const log = (line: string) => console.log(line)

  log('starting dist/berth on a fresh data dir')
  const berth = await startBerth(tempDir('berth-bench-load-'))
  const idleRssMb = await measureIdleRss(berth.proc.pid, IDLE_SECONDS)
  log(`  idle RSS after ${IDLE_SECONDS} s: ${idleRssMb.toFixed(1)} MB`)
  const baseline = options.baseline ? await startBerth(tempDir('berth-bench-baseline-'), 2, {}, options.baseline) : null
  if (baseline) log(`baseline ${options.baseline} started too; the rounds measure both, taking turns going first`)
  const measured = await measureThroughput(berth, options.rounds, log, baseline)
  const comparisons = measured.slice(0, 2)
  const afterLoadRssMb = rssMb(berth.proc.pid)
  // Nothing else of ours may run while start-up is timed.
  await berth.stop()
  await baseline?.stop()

  log(`start-up: ${options.startupRuns} runs each on a fresh and an existing data dir`)
  const startup = await measureStartup(options.startupRuns)
  const fresh = startupSummary(startup.freshMs)
  const existing = startupSummary(startup.existingMs)

  const report: Report = {
    date: new Date().toISOString(),
    machine: about,
    wrk: { ...WRK_SETTINGS, rounds: options.rounds },
    comparisons,
    startup: {
      runs: options.startupRuns,
      fresh,
      existing,
      maxMedianMs: TARGETS.startupMs,
      pass: fresh.medianMs < TARGETS.startupMs && existing.medianMs < TARGETS.startupMs,
    },
    memory: { idleRssMb, afterLoadRssMb, maxIdleRssMb: TARGETS.idleRssMb, pass: idleRssMb < TARGETS.idleRssMb },
    contention: summarizeContention(comparisons, startup.contention),
    pass: false,
  }
  report.pass = comparisons.every((c) => c.pass) && report.startup.pass && report.memory.pass

  log('')
  log(formatReport(report))
  if (baseline) log(`\n${againstBaseline(options.baseline!, comparisons, measured.slice(2))}`)
  if (options.json) {
    writeJson(RESULTS_FILE, report)
    log(`\nwrote ${RESULTS_FILE}`)
  }
  return report.pass ? 0 : 1
}

let code = 1
try {
  code = await main()
} catch (err) {
  console.error(err instanceof Error ? err.message : err)
} finally {
  cleanup()
}
process.exit(code)
