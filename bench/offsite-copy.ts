/**
 * `bun bench/offsite-copy.ts [--rounds 3] [--json]` (or `bun run bench:offsite`): copy throughput
 * of a 1 GiB archive to an S3 server on this machine (s3rver, the tests' server, in its own
 * process), Berth against `rclone copy` (Debian's rclone), same file, same server, same run.
 *
 * - Berth: what the copier does with an archive: `seal(archiveStore.read(key).stream, recipients)`
 *   (age) then `S3Destination.put`, in a process of its own (test/helpers/offsite-put.ts) so its
 *   memory is measured alone: its RSS after a small warm-up put (idle) and its peak during the
 *   copy.
 * - rclone: `rclone copy FILE x:BUCKET/rclone/` with its defaults (5 MiB parts, 4 at once),
 *   configured by RCLONE_CONFIG_X_* (provider Other, path style): the reference of the goal.
 * - rclone crypt: the same through an rclone `crypt` remote over it (NaCl secretbox, in Go), the
 *   same work as Berth's (encrypt, then upload), for a second ratio.
 * - The server's ceiling: the same put through Berth's destination without sealing, and the CPU
 *   share s3rver (one Node-style event loop writing files) used during each copy: near 100 % of
 *   a core means the server, not the client, sets the pace.
 *
 * The three are interleaved per round, in an order that turns each round. The archive is made once
 * (512 MiB random then 512 MiB of repeated text, as a site archive mixes compressed and plain
 * data) in the system's temp folder and kept for the next run. Goals (issue 25): Berth / rclone
 * throughput at least 0.8; Berth's peak RSS within 64 MiB of its idle RSS.
 */
import { spawnSync } from 'bun'
import { existsSync, mkdirSync, readFileSync, renameSync, statSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateIdentity, identityToRecipient } from 'age-encryption'
import { startS3Server, S3RVER_KEY, type S3Server } from '../test/helpers/s3-server'
import { median } from './stats'

const arg = (name: string) => process.argv[process.argv.indexOf(name) + 1]
const ROUNDS = Number(process.argv.includes('--rounds') ? arg('--rounds') : 3)
const JSON_OUT = process.argv.includes('--json')
const MiB = 1024 * 1024
const SIZE = 1024 * MiB
const GOAL_RATIO = 0.8
const GOAL_RSS_MIB = 64

interface Copy {
  seconds: number
  mibPerSecond: number
  /** s3rver's CPU time over the copy's wall time (1 = one core busy throughout). */
  serverCpu: number
  rssGrowthMib?: number
}

/** The benchmark's archive, made once: 512 MiB of random bytes then 512 MiB of repeated text. */
function archive(): string {
  const dir = join(tmpdir(), 'berth-bench-offsite')
  const path = join(dir, 'archive-1g.bin')
  if (existsSync(path) && statSync(path).size === SIZE) return path
  mkdirSync(dir, { recursive: true })
  console.log(`making ${path} (1 GiB)...`)
  const made = spawnSync(['sh', '-c', `set -e; head -c ${SIZE / 2} /dev/urandom > "$1.part"; yes 'berth archive: a line of text that compresses well 0123456789' | head -c ${SIZE / 2} >> "$1.part"`, 'sh', path])
  if (made.exitCode !== 0) throw new Error(`could not make the archive: ${made.stderr.toString()}`)
  renameSync(`${path}.part`, path)
  return path
}

/** CPU seconds (user + system) a process has used so far, from /proc. */
function cpuSeconds(pid: number | undefined): number {
  if (!pid) return 0
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

async function timed(s3: S3Server, run: () => Promise<Partial<Copy>> | Partial<Copy>): Promise<Copy> {
  const cpuBefore = cpuSeconds(s3.pid())
  const started = performance.now()
  const extra = await run()
  const seconds = extra.seconds ?? (performance.now() - started) / 1000
  const wall = (performance.now() - started) / 1000
  return { seconds, mibPerSecond: SIZE / MiB / seconds, serverCpu: (cpuSeconds(s3.pid()) - cpuBefore) / wall, ...extra }
}

/** One put through Berth's S3 destination in its own process; `recipients` empty = not sealed. */
async function berthCopy(s3: S3Server, file: string, key: string, recipients: string[]): Promise<Copy> {
  return timed(s3, () => {
    const job = { settings: s3.offsite('berth'), key, file, recipients }
    const run = spawnSync([process.execPath, join(import.meta.dirname, '../test/helpers/offsite-put.ts')], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', OFFSITE_PUT: JSON.stringify(job) },
    })
    if (run.exitCode !== 0) throw new Error(`offsite-put failed: ${run.stderr.toString()}`)
    const r = JSON.parse(run.stdout.toString()) as { idleRss: number; peakRss: number; seconds: number; sizeBytes: number }
    return { seconds: r.seconds, rssGrowthMib: (r.peakRss - r.idleRss) / MiB }
  })
}

async function rcloneCopy(s3: S3Server, file: string, round: number, crypt: boolean): Promise<Copy> {
  // A clean environment: rclone's AWS library refuses some CA-bundle settings of a shell.
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: tmpdir(),
    RCLONE_CONFIG_X_TYPE: 's3',
    RCLONE_CONFIG_X_PROVIDER: 'Other',
    RCLONE_CONFIG_X_ENDPOINT: s3.endpoint,
    RCLONE_CONFIG_X_REGION: 'us-east-1',
    RCLONE_CONFIG_X_ACCESS_KEY_ID: S3RVER_KEY.accessKeyId,
    RCLONE_CONFIG_X_SECRET_ACCESS_KEY: S3RVER_KEY.secretAccessKey,
    RCLONE_CONFIG_X_FORCE_PATH_STYLE: 'true',
    RCLONE_CONFIG_C_TYPE: 'crypt',
    RCLONE_CONFIG_C_REMOTE: `x:${s3.bucket}/rclone-crypt`,
    RCLONE_CONFIG_C_FILENAME_ENCRYPTION: 'off',
    RCLONE_CONFIG_C_DIRECTORY_NAME_ENCRYPTION: 'false',
  }
  const obscured = spawnSync(['rclone', 'obscure', 'bench-password'], { env })
  env.RCLONE_CONFIG_C_PASSWORD = obscured.stdout.toString().trim()
  return timed(s3, () => {
    const run = spawnSync(['rclone', 'copy', '--no-check-dest', file, crypt ? `c:${round}/` : `x:${s3.bucket}/rclone/${round}/`], { env })
    if (run.exitCode !== 0) throw new Error(`rclone failed: ${run.stderr.toString()}`)
    return {}
  })
}

function summary(copies: Copy[]) {
  const growth = copies.map((c) => c.rssGrowthMib).filter((g): g is number => g !== undefined)
  return {
    mibPerSecond: median(copies.map((c) => c.mibPerSecond)),
    serverCpu: median(copies.map((c) => c.serverCpu)),
    rounds: copies.map((c) => Number(c.mibPerSecond.toFixed(1))),
    ...(growth.length ? { rssGrowthMib: { median: median(growth), max: Math.max(...growth) } } : {}),
  }
}

async function main() {
  if (spawnSync(['rclone', 'version']).exitCode !== 0) throw new Error('rclone is not installed: apt-get install -y rclone')
  const file = archive()
  const recipient = await identityToRecipient(await generateIdentity())
  const s3 = await startS3Server({ bucket: 'bench' })
  const copies = { berth: [] as Copy[], rclone: [] as Copy[], rcloneCrypt: [] as Copy[], unsealed: [] as Copy[] }
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const order = (['berth', 'rclone', 'unsealed', 'rcloneCrypt'] as const).map((_, i, all) => all[(i + round - 1) % all.length]!)
      for (const who of order) {
        const copy = who === 'rclone' || who === 'rcloneCrypt'
          ? await rcloneCopy(s3, file, round, who === 'rcloneCrypt')
          : await berthCopy(s3, file, `archives/bench/${who}-${round}.age`, who === 'berth' ? [recipient] : [])
        copies[who].push(copy)
        console.log(`round ${round} ${who.padEnd(11)} ${copy.mibPerSecond.toFixed(1)} MiB/s  s3rver CPU ${(copy.serverCpu * 100).toFixed(0)} %${copy.rssGrowthMib !== undefined ? `  RSS +${copy.rssGrowthMib.toFixed(0)} MiB` : ''}`)
      }
      // Keep the server's folder small: drop this round's objects.
      spawnSync(['rm', '-rf', join(s3.dir, s3.bucket)])
      spawnSync(['mkdir', '-p', join(s3.dir, s3.bucket)])
    }
  } finally {
    await s3.remove()
  }
  const berth = summary(copies.berth)
  const rclone = summary(copies.rclone)
  const unsealed = summary(copies.unsealed)
  const rcloneCrypt = summary(copies.rcloneCrypt)
  const ratio = berth.mibPerSecond / rclone.mibPerSecond
  const cryptRatio = berth.mibPerSecond / rcloneCrypt.mibPerSecond
  const report = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? '', bun: Bun.version },
    archiveMiB: SIZE / MiB,
    rounds: ROUNDS,
    berthSealed: berth,
    rclone,
    rcloneCrypt,
    berthUnsealed: unsealed,
    ratio: Number(ratio.toFixed(2)),
    ratioToRcloneCrypt: Number(cryptRatio.toFixed(2)),
    pass: { ratio: ratio >= GOAL_RATIO, memory: (berth.rssGrowthMib?.max ?? Infinity) <= GOAL_RSS_MIB },
  }
  if (JSON_OUT) console.log(JSON.stringify(report, null, 2))
  console.log(`\n1 GiB archive to s3rver, median of ${ROUNDS} rounds:`)
  console.log(`  Berth (age-sealed, S3 destination)  ${berth.mibPerSecond.toFixed(1)} MiB/s  (s3rver CPU ${(berth.serverCpu * 100).toFixed(0)} %)`)
  console.log(`  rclone copy                         ${rclone.mibPerSecond.toFixed(1)} MiB/s  (s3rver CPU ${(rclone.serverCpu * 100).toFixed(0)} %)`)
  console.log(`  rclone copy through crypt            ${rcloneCrypt.mibPerSecond.toFixed(1)} MiB/s  (s3rver CPU ${(rcloneCrypt.serverCpu * 100).toFixed(0)} %)`)
  console.log(`  Berth, not sealed (server ceiling)  ${unsealed.mibPerSecond.toFixed(1)} MiB/s  (s3rver CPU ${(unsealed.serverCpu * 100).toFixed(0)} %)`)
  console.log(`  ratio Berth / rclone: ${ratio.toFixed(2)} (goal >= ${GOAL_RATIO}: ${report.pass.ratio ? 'met' : 'NOT met'}); Berth / rclone crypt: ${cryptRatio.toFixed(2)}`)
  console.log(`  load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`)
  console.log(`  Berth RSS over idle: median ${berth.rssGrowthMib?.median.toFixed(0)} MiB, max ${berth.rssGrowthMib?.max.toFixed(0)} MiB (goal <= ${GOAL_RSS_MIB}: ${report.pass.memory ? 'met' : 'NOT met'})`)
}

await main()
