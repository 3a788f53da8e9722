/**
 * `bun run bench:databases [--rounds 3] [--dump-rounds 2] [--scale 70] [--pgbench-scale 10] [--seconds 20] [--only=create|pgbench|dump] [--quick]`:
 * databases (issue 40) on the compiled binary (a copy of dist/berth), the real engine and the
 * database images, against the same images run by hand with Docker in the same run.
 *
 * Every reference container is made from the Berth database container's own settings (read from
 * its inspect: command line, memory, CPUs, pids, shm, tmpfs, capabilities, read-only root), on a
 * network of its own under the same alias; the user and database are made with the same commands
 * Berth runs (the engine kits of src/drivers/databases). Clients run in a container of the
 * engine's image (psql, pgbench, mariadb, redis-cli) on the site's network, and on the reference's.
 *
 * 1. Create to first query, per engine, `rounds` rounds, the sides' order swapped each round:
 *    - berth: from `POST databases/` to the first answered query (`SELECT 1`, `PING`) from the
 *      client on the site's network with the URL the POST answered (polled every 20 ms);
 *    - docker: from `docker volume create` + `docker run` of the same image with the same limits,
 *      polled every 20 ms (`docker exec` of the kit's readiness check), the user made once ready,
 *      to the first answered query from the client, same poll.
 *    Target: berth / docker at most 1.3 (the median of the per-round ratios).
 * 2. pgbench (PostgreSQL), from the client on each network, `pgbench -i -s N` first, then per
 *    round both modes (select-only `-S` and the default TPC-B-like mix), `-c 8 -j 2 -T seconds`,
 *    the sides' order swapped each round; the servers' CPU per transaction from their cgroups.
 *    Target: berth / docker tps at least 0.95 (median of the per-round ratios).
 * 3. Dump and restore of a ~1 GiB database (`pgbench -i -s 70`): Berth's runtime
 *    (DockerDatabaseRuntime.dump / restore, the code backups and restores use) to and from a file,
 *    against `pg_dump -Fc` and `pg_restore` run by hand with `docker exec` (the same restore into a
 *    scratch database then renamed), `dump-rounds` rounds, order swapped. Reported, with bytes.
 *
 * Everything made (Berth's sites, the reference's containers, volumes, network) is removed at the end.
 */
import { spawnSync } from 'bun'
import { createReadStream, createWriteStream, rmSync, statSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import type Docker from 'dockerode'
import { KITS } from '../src/drivers/databases/images'
import { localDatabaseRuntime } from '../src/drivers/databases/local'
import type { DbExec } from '../src/drivers/databases/exec'
import type { DbEngine, DatabaseSpec } from '../src/domain/databases'
import { createLogger } from '../src/lib/logger'
import { ENGINE_SOCKET } from '../test/helpers/engine'
import { docker } from '../test/helpers/sites'
import { cleanup, cleanupOnExit, containerMicros, snapshotBinary, startBerth, tempDir, type RunningBerth } from './processes'
import { buySite, instanceOf, removeSites } from './sites'
import { median } from './stats'

const TARGETS = { create: 1.3, pgbench: 0.95 }
const argv = process.argv.slice(2)
const arg = (name: string, fallback: number) => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) || fallback : fallback)
const quick = argv.includes('--quick')
const rounds = arg('--rounds', quick ? 1 : 3)
const dumpRounds = arg('--dump-rounds', quick ? 1 : 2)
const scale = arg('--scale', quick ? 5 : 70)
const pgbenchScale = arg('--pgbench-scale', 10)
const seconds = arg('--seconds', quick ? 5 : 20)
const only = argv.find((a) => a.startsWith('--only='))?.slice('--only='.length)
if (only && !['create', 'pgbench', 'dump'].includes(only)) throw new Error('--only= takes create, pgbench or dump')
const want = (part: string) => !only || only === part
const ENGINES: DbEngine[] = ['postgres', 'mariadb', 'redis']
const IMAGES: Record<DbEngine, string> = { postgres: 'berth/postgres:1', mariadb: 'berth/mariadb:1', redis: 'berth/redis:1' }
const REF = 'berth-bench-databases'
const f0 = (n: number) => n.toFixed(0)
const f2 = (n: number) => n.toFixed(2)
const mib = (n: number) => `${f0(n / 2 ** 20)} MiB`

interface Site { slug: string; key: string }
interface Db { engine: DbEngine; name: string; user: string; password: string; host: string }

function sh(args: string[], input?: string): { code: number; out: string; err: string } {
  const r = spawnSync(args, { stdout: 'pipe', stderr: 'pipe', stdin: input === undefined ? 'ignore' : Buffer.from(input) })
  return { code: r.exitCode ?? -1, out: r.stdout.toString(), err: r.stderr.toString() }
}
function must(args: string[], input?: string): string {
  const r = sh(args, input)
  if (r.code !== 0) throw new Error(`${args.join(' ')} exited ${r.code}:\n${r.out}${r.err}`)
  return r.out
}
async function shAsync(args: string[], io: { stdin?: string; stdout?: string } = {}): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn(args, { stdin: io.stdin ? Bun.file(io.stdin) : 'ignore', stdout: io.stdout ? Bun.file(io.stdout) : 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([io.stdout ? '' : new Response(p.stdout as ReadableStream).text(), new Response(p.stderr).text(), p.exited])
  return { code, out, err }
}
/** `docker exec` of a kit's command (its user, environment and input) in a container. */
const execOf = (container: string, e: DbExec): [string[], string | undefined] => [
  ['docker', 'exec', ...(typeof e.stdin === 'string' ? ['-i'] : []), ...(e.user ? ['-u', e.user] : []), ...(e.env ?? []).flatMap((v) => ['-e', v]), container, ...e.cmd],
  typeof e.stdin === 'string' ? e.stdin : undefined,
]

/** The client's first-query command for a database (in the client container of its engine). */
function queryOf(db: Db): string[] {
  if (db.engine === 'postgres') return ['env', 'PGCONNECT_TIMEOUT=5', 'psql', `postgres://${db.user}:${db.password}@${db.host}:5432/${db.name}`, '-X', '-A', '-t', '-c', 'SELECT 1']
  if (db.engine === 'mariadb') return ['mariadb', '-h', db.host, '-P', '3306', '-u', db.user, `-p${db.password}`, '--connect-timeout=5', db.name, '-N', '-e', 'SELECT 1']
  return ['redis-cli', '--no-auth-warning', '-u', `redis://${db.user}:${db.password}@${db.host}:6379/0`, 'PING']
}
const answered = (db: Db, out: string) => (db.engine === 'redis' ? out.trim() === 'PONG' : out.trim() === '1')

async function firstQuery(client: string, db: Db, since: number, timeoutMs = 300_000): Promise<number> {
  for (;;) {
    const r = await shAsync(['docker', 'exec', client, ...queryOf(db)])
    if (r.code === 0 && answered(db, r.out)) return performance.now() - since
    if (performance.now() - since > timeoutMs) throw new Error(`${db.engine} ${db.name} did not answer within ${timeoutMs / 1000} s: ${r.out}${r.err}`)
    await Bun.sleep(20)
  }
}

class Bench {
  private n = 0
  /** The settings of Berth's database container of each engine, which the references copy. */
  readonly shape = new Map<DbEngine, Docker.ContainerInspectInfo>()
  readonly clients = new Map<string, string>()

  constructor(readonly berth: RunningBerth, readonly dataDir: string, readonly site: Site, readonly siteNetwork: string) {}

  async call(method: string, rest: string, body?: unknown): Promise<{ status: number; data: any }> {
    const res = await fetch(`${this.berth.url}/api/v1/sites/${this.site.slug}/${rest}`, { method, headers: { authorization: `Bearer ${this.site.key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
    const json = (await res.json()) as { data: any }
    return { status: res.status, data: json.data ?? json }
  }

  /** A database through the API; its connection from the answer. */
  async create(engine: DbEngine, name: string): Promise<Db> {
    const r = await this.call('POST', 'databases/', { engine, name })
    if (r.status !== 201) throw new Error(`POST databases/ ${engine} ${name}: ${r.status} ${JSON.stringify(r.data)}`)
    const url = new URL(r.data.url)
    return { engine, name, user: decodeURIComponent(url.username), password: decodeURIComponent(url.password), host: r.data.host }
  }

  async container(name: string): Promise<Docker.ContainerInspectInfo> {
    const [c] = await docker.listContainers({ filters: { label: [`dev.berth.instance=${instanceOf(this.dataDir)}`, 'dev.berth.role=database', `dev.berth.site-slug=${this.site.slug}`, `dev.berth.database=${name}`] } })
    if (!c) throw new Error(`no container for database ${name}`)
    return docker.getContainer(c.Id).inspect()
  }

  /** A client container of `engine`'s image on `network` (sleeping; the benchmark execs into it). */
  client(engine: DbEngine, network: string): string {
    const key = `${engine}@${network}`
    if (!this.clients.has(key)) {
      const name = `${REF}-client-${this.n++}`
      must(['docker', 'run', '-d', '--name', name, '--label', REF, '--network', network, '--entrypoint', 'sleep', IMAGES[engine], 'infinity'])
      this.clients.set(key, name)
    }
    return this.clients.get(key)!
  }

  /**
   * `docker run` of the engine's image with the settings of Berth's container of that engine, on
   * the reference network under the alias db-{name}, then the kit's readiness check until it
   * passes, the user and database made, and the first query from the reference's client. The ms
   * from the volume's creation to that answer, and the reference's database.
   */
  async reference(engine: DbEngine, name: string): Promise<{ ms: number; db: Db; id: string }> {
    const shape = this.shape.get(engine)!
    const h = shape.HostConfig
    const container = `${REF}-${name}`
    const db: Db = { engine, name, user: 'site', password: Array.from({ length: 32 }, () => 'abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789'[Math.floor(Math.random() * 57)]).join(''), host: `db-${name}` }
    const spec = { siteId: 'ref', slug: 'ref', name, engine, memoryMb: 0, cpuCores: 0, diskGb: 0, user: db.user, password: db.password } satisfies DatabaseSpec
    const kit = KITS[engine]
    const client = this.client(engine, REF)
    const started = performance.now()
    must(['docker', 'volume', 'create', '--label', REF, container])
    const id = must(['docker', 'run', '-d', '--name', container, '--label', REF, '--network', REF, '--network-alias', db.host, '--hostname', db.host,
      '--mount', `type=volume,source=${container},target=${shape.Mounts[0]!.Destination}`, '--init', '--read-only',
      ...Object.entries(h.Tmpfs ?? {}).flatMap(([path, opts]) => ['--tmpfs', `${path}:${opts}`]),
      '--cap-drop', 'ALL', ...(h.CapAdd ?? [] as string[]).flatMap((c: string) => ['--cap-add', c]), ...(h.SecurityOpt ?? [] as string[]).flatMap((o: string) => ['--security-opt', o]),
      '--ipc', 'private', '--shm-size', String(h.ShmSize), '--memory', String(h.Memory), '--memory-swap', String(h.MemorySwap), '--cpus', String((h.NanoCpus ?? 0) / 1e9), '--pids-limit', String(h.PidsLimit),
      IMAGES[engine], ...shape.Config.Cmd]).trim()
    for (;;) {
      if ((await shAsync(execOf(container, kit.ready())[0])).code === 0) break
      if (performance.now() - started > 300_000) throw new Error(`reference ${engine} never got ready`)
      await Bun.sleep(20)
    }
    const [args, input] = execOf(container, kit.provision(spec))
    must(args, input)
    const ms = await firstQuery(client, db, started)
    return { ms, db, id }
  }

  dropReference(name: string) {
    sh(['docker', 'rm', '-f', `${REF}-${name}`])
    sh(['docker', 'volume', 'rm', '-f', `${REF}-${name}`])
  }
}

async function createRounds(b: Bench): Promise<string[]> {
  const lines: string[] = []
  for (const engine of ENGINES) {
    const berth: number[] = []
    const ref: number[] = []
    for (let i = 0; i < rounds; i++) {
      for (const side of i % 2 === 0 ? ['berth', 'docker'] : ['docker', 'berth']) {
        const name = `c${engine[0]}${i}${Math.random().toString(36).slice(2, 6)}`
        if (side === 'berth') {
          const started = performance.now()
          const db = await b.create(engine, name)
          const ms = await firstQuery(b.client(engine, b.siteNetwork), db, started)
          berth.push(ms)
          // A vps site holds 3 at once: each round's goes (its volume kept in the grace, not counted).
          const gone = await b.call('DELETE', `databases/${name}/`)
          if (gone.status !== 200) throw new Error(`DELETE ${name}: ${gone.status} ${JSON.stringify(gone.data)}`)
        } else {
          const r = await b.reference(engine, name)
          ref.push(r.ms)
          b.dropReference(name)
        }
        console.log(`  create round ${i + 1} ${engine.padEnd(8)} ${side.padEnd(6)} ${f0(side === 'berth' ? berth.at(-1)! : ref.at(-1)!)} ms`)
      }
    }
    const ratios = berth.map((ms, i) => ms / ref[i]!)
    lines.push(`  create to first query, ${engine.padEnd(8)}: berth p50 ${f0(median(berth))} ms [${berth.map(f0).join(', ')}], docker run p50 ${f0(median(ref))} ms [${ref.map(f0).join(', ')}]; berth/docker ${f2(median(ratios))} [${ratios.map(f2).join(', ')}]`)
    verdicts.push([`create to first query (${engine}) <= ${TARGETS.create}x docker run`, median(ratios) <= TARGETS.create])
  }
  return lines
}

interface PgbenchRun { tps: number; cpuPerTx: number }
async function pgbench(client: string, db: Db, serverId: string, extra: string[]): Promise<PgbenchRun> {
  const before = containerMicros(serverId)
  const r = await shAsync(['docker', 'exec', client, 'pgbench', '-c', '8', '-j', '2', '-T', String(seconds), ...extra, `postgres://${db.user}:${db.password}@${db.host}:5432/${db.name}`])
  if (r.code !== 0) throw new Error(`pgbench ${extra.join(' ')}: ${r.out}${r.err}`)
  const tps = Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(r.out)?.[1])
  const txs = Number(/number of transactions actually processed: (\d+)/.exec(r.out)?.[1])
  return { tps, cpuPerTx: (containerMicros(serverId) - before) / txs }
}

async function pgbenchRounds(b: Bench, berthDb: Db, ref: { db: Db; id: string }): Promise<string[]> {
  const berthId = (await b.container(berthDb.name)).Id
  const sides = { berth: { client: b.client('postgres', b.siteNetwork), db: berthDb, id: berthId }, docker: { client: b.client('postgres', REF), db: ref.db, id: ref.id } }
  await Promise.all(Object.values(sides).map((s) => must(['docker', 'exec', s.client, 'pgbench', '-i', '-q', '-s', String(pgbenchScale), `postgres://${s.db.user}:${s.db.password}@${s.db.host}:5432/${s.db.name}`])))
  // The commit's cost on each side's disk (TPC-B commits each transaction): Berth's data is on an
  // ext4 disk of its own (a loop device, SiteDisks), the reference's on the engine's volume folder.
  const fsync = (id: string) => {
    const out = must(['docker', 'exec', '-u', 'postgres', id, '/usr/lib/postgresql/15/bin/pg_test_fsync', '-s', '2', '-f', '/var/lib/berth-db/pgdata/berth-fsync-test'])
    return Number(/fdatasync\s+([\d.]+) ops\/sec/.exec(out)?.[1])
  }
  const syncs = { berth: fsync(berthId), docker: fsync(ref.id) }
  console.log(`  pg_test_fsync, one 8 kB write + fdatasync: berth ${f0(syncs.berth)}/s, docker ${f0(syncs.docker)}/s`)
  const modes = { 'select-only': ['-S'], 'tpc-b': [] as string[] }
  const runs: Record<string, Record<'berth' | 'docker', PgbenchRun[]>> = { 'select-only': { berth: [], docker: [] }, 'tpc-b': { berth: [], docker: [] } }
  for (let i = 0; i < rounds; i++) {
    for (const [mode, extra] of Object.entries(modes)) {
      for (const side of (i % 2 === 0 ? ['berth', 'docker'] : ['docker', 'berth']) as ('berth' | 'docker')[]) {
        const s = sides[side]
        const r = await pgbench(s.client, s.db, s.id, extra)
        runs[mode]![side].push(r)
        console.log(`  pgbench round ${i + 1} ${mode.padEnd(11)} ${side.padEnd(6)} ${f0(r.tps)} tps, server CPU ${f0(r.cpuPerTx)} µs per transaction; load ${f2(loadavg()[0]!)}`)
      }
    }
  }
  const lines = [`  pgbench -s ${pgbenchScale}, -c 8 -j 2 -T ${seconds}, from a client container on each network (limits on both: ${(b.shape.get('postgres')!.HostConfig.NanoCpus ?? 0) / 1e9} CPU, ${mib(b.shape.get('postgres')!.HostConfig.Memory ?? 0)}):`]
  lines.push(`    pg_test_fsync (8 kB write + fdatasync on the data folder's disk): berth ${f0(syncs.berth)}/s (its own ext4 disk on a loop device), docker ${f0(syncs.docker)}/s (the engine's volume folder)`)
  for (const mode of Object.keys(modes)) {
    const r = runs[mode]!
    const ratios = r.berth.map((x, i) => x.tps / r.docker[i]!.tps)
    lines.push(`    ${mode.padEnd(11)} berth p50 ${f0(median(r.berth.map((x) => x.tps)))} tps [${r.berth.map((x) => f0(x.tps)).join(', ')}], docker p50 ${f0(median(r.docker.map((x) => x.tps)))} tps [${r.docker.map((x) => f0(x.tps)).join(', ')}]; berth/docker ${f2(median(ratios))} [${ratios.map(f2).join(', ')}]; server CPU per transaction berth ${f0(median(r.berth.map((x) => x.cpuPerTx)))} µs, docker ${f0(median(r.docker.map((x) => x.cpuPerTx)))} µs`)
    verdicts.push([`pgbench ${mode} berth/docker >= ${TARGETS.pgbench}`, median(ratios) >= TARGETS.pgbench])
  }
  return lines
}

async function dumpRoundsOf(b: Bench, berthDb: Db, ref: { db: Db }): Promise<string[]> {
  const sides = { berth: { client: b.client('postgres', b.siteNetwork), db: berthDb }, docker: { client: b.client('postgres', REF), db: ref.db } }
  const init = performance.now()
  await Promise.all(Object.values(sides).map((s) => shAsync(['docker', 'exec', s.client, 'pgbench', '-i', '-q', '-s', String(scale), `postgres://${s.db.user}:${s.db.password}@${s.db.host}:5432/${s.db.name}`]).then((r) => { if (r.code !== 0) throw new Error(`pgbench -i -s ${scale}: ${r.err}`) })))
  const sizeOf = (s: { client: string; db: Db }) => Number(must(['docker', 'exec', s.client, 'psql', `postgres://${s.db.user}:${s.db.password}@${s.db.host}:5432/${s.db.name}`, '-X', '-A', '-t', '-c', 'SELECT pg_database_size(current_database())']).trim())
  const rows = (s: { client: string; db: Db }) => Number(must(['docker', 'exec', s.client, 'psql', `postgres://${s.db.user}:${s.db.password}@${s.db.host}:5432/${s.db.name}`, '-X', '-A', '-t', '-c', 'SELECT count(*) FROM pgbench_accounts']).trim())
  console.log(`  pgbench -i -s ${scale} on both: ${f0((performance.now() - init) / 1000)} s; sizes berth ${mib(sizeOf(sides.berth))}, docker ${mib(sizeOf(sides.docker))}`)
  const shape = b.shape.get('postgres')!
  const runtime = localDatabaseRuntime({ socketPath: ENGINE_SOCKET, instanceId: instanceOf(b.dataDir)!, log: createLogger('warn'), images: IMAGES })
  const spec: DatabaseSpec = { siteId: '', slug: b.site.slug, name: berthDb.name, engine: 'postgres', memoryMb: (shape.HostConfig.Memory ?? 0) / 2 ** 20, cpuCores: (shape.HostConfig.NanoCpus ?? 0) / 1e9, diskGb: 0, user: berthDb.user, password: berthDb.password }
  const refName = `${REF}-${ref.db.name}`
  const out = { berth: { dump: [] as number[], restore: [] as number[], bytes: 0 }, docker: { dump: [] as number[], restore: [] as number[], bytes: 0 } }
  const expected = scale * 100_000
  for (let i = 0; i < dumpRounds; i++) {
    for (const side of (i % 2 === 0 ? ['berth', 'docker'] : ['docker', 'berth']) as ('berth' | 'docker')[]) {
      const file = join(tmpdir(), `${REF}-${side}-${i}.dump`)
      try {
        let t = performance.now()
        if (side === 'berth') {
          const to = createWriteStream(file)
          await runtime.dump(spec, to)
          await new Promise<void>((resolve, reject) => to.end((err?: Error | null) => (err ? reject(err) : resolve())))
        } else {
          const r = await shAsync(['docker', 'exec', '-u', 'postgres', refName, 'pg_dump', '-Fc', '-d', ref.db.name], { stdout: file })
          if (r.code !== 0) throw new Error(`pg_dump by hand: ${r.err}`)
        }
        const dumpMs = performance.now() - t
        out[side].bytes = statSync(file).size
        t = performance.now()
        if (side === 'berth') await runtime.restore(spec, createReadStream(file))
        else {
          const scratch = `${ref.db.name}__restore`
          const script = `set -eu
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c 'DROP DATABASE IF EXISTS "${scratch}"' -c 'CREATE DATABASE "${scratch}" OWNER "site"'
pg_restore --exit-on-error --single-transaction --no-owner --role=site -d "${scratch}"
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c 'DROP DATABASE IF EXISTS "${ref.db.name}" WITH (FORCE)' -c 'ALTER DATABASE "${scratch}" RENAME TO "${ref.db.name}"'`
          const r = await shAsync(['docker', 'exec', '-i', '-u', 'postgres', refName, 'bash', '-c', script], { stdin: file })
          if (r.code !== 0) throw new Error(`pg_restore by hand: ${r.err}`)
        }
        const restoreMs = performance.now() - t
        const got = rows(sides[side])
        if (got !== expected) throw new Error(`${side}: ${got} accounts after the restore, not ${expected}`)
        out[side].dump.push(dumpMs)
        out[side].restore.push(restoreMs)
        console.log(`  dump round ${i + 1} ${side.padEnd(6)} dump ${f0(dumpMs)} ms (${mib(out[side].bytes)}), restore ${f0(restoreMs)} ms, ${got} accounts back; load ${f2(loadavg()[0]!)}`)
      } finally {
        rmSync(file, { force: true })
      }
    }
  }
  const ratio = (k: 'dump' | 'restore') => median(out.berth[k].map((ms, i) => ms / out.docker[k][i]!))
  return [
    `  dump and restore of a ${mib(sizeOf(sides.berth))} database (pgbench -i -s ${scale}; ${expected} accounts checked after each restore), ${dumpRounds} rounds:`,
    `    dump    berth runtime p50 ${f0(median(out.berth.dump))} ms [${out.berth.dump.map(f0).join(', ')}] (${mib(out.berth.bytes)}), pg_dump -Fc by hand p50 ${f0(median(out.docker.dump))} ms [${out.docker.dump.map(f0).join(', ')}] (${mib(out.docker.bytes)}); berth/hand ${f2(ratio('dump'))}`,
    `    restore berth runtime p50 ${f0(median(out.berth.restore))} ms [${out.berth.restore.map(f0).join(', ')}], pg_restore by hand p50 ${f0(median(out.docker.restore))} ms [${out.docker.restore.map(f0).join(', ')}]; berth/hand ${f2(ratio('restore'))}`,
  ]
}

const verdicts: [string, boolean][] = []

async function main() {
  cleanupOnExit()
  const binary = snapshotBinary()
  const dataDir = tempDir('berth-bench-databases-')
  const ssh = 20_000 + Math.floor(Math.random() * 40_000)
  const berth = await startBerth(dataDir, 2, { BERTH_DNS_LISTEN: 'off', BERTH_SSH_PORT_RANGE: `${ssh}-${ssh + 49}`, BERTH_RATE_LIMITS_CHECKOUT_CREATE: '10000/hour', BERTH_RATE_LIMITS_CHECKOUT_POLL: '100000/minute' })
  const loadBefore = loadavg().map(f2).join(' ')
  const lines: string[] = []
  try {
    console.log(`databases (issue 40): ${binary}; ${ENGINES.map((e) => `${IMAGES[e]} ${must(['docker', 'image', 'inspect', '-f', '{{.Id}}', IMAGES[e]]).trim().slice(7, 19)}`).join(', ')}; ${rounds} rounds; load average ${loadBefore}; nproc ${navigator.hardwareConcurrency}; ${new Date().toISOString()}`)
    must(['docker', 'network', 'create', '--label', REF, REF])
    const site = await buySite(berth.url, 'bdb', 'svc_business_monthly', 240_000)
    const [sc] = await docker.listContainers({ filters: { label: [`dev.berth.instance=${instanceOf(dataDir)}`, `dev.berth.site-slug=${site.slug}`] } })
    const network = Object.keys((await docker.getContainer(sc!.Id).inspect()).NetworkSettings.Networks)[0]!
    const b = new Bench(berth, dataDir, site, network)
    // Berth's containers, whose settings the references copy (and the warm-up of each engine).
    await Promise.all(ENGINES.map((engine) => docker.getImage(IMAGES[engine]).inspect()))
    const berthPg = await b.create('postgres', 'bench')
    b.shape.set('postgres', await b.container('bench'))
    for (const engine of ['mariadb', 'redis'] as const) {
      const warm = await b.create(engine, `w${engine}`)
      b.shape.set(engine, await b.container(warm.name))
      await b.call('DELETE', `databases/${warm.name}/`)
    }
    if (want('create')) lines.push(...(await createRounds(b)))
    if (want('pgbench') || want('dump')) {
      const ref = await b.reference('postgres', 'refbench')
      if (want('pgbench')) lines.push(...(await pgbenchRounds(b, berthPg, ref)))
      if (want('dump')) lines.push(...(await dumpRoundsOf(b, berthPg, ref)))
    }
    console.log(`\nDatabases (issue 40); load average ${loadBefore} before, ${loadavg().map(f2).join(' ')} after`)
    for (const line of lines) console.log(line)
    console.log(`  ${verdicts.map(([name, ok]) => `${name}: ${ok ? 'PASS' : 'FAIL'}`).join('   ')}`)
    if (verdicts.some(([, ok]) => !ok)) process.exitCode = 1
  } finally {
    await berth.stop()
    await removeSites(dataDir)
    sh(['sh', '-c', `docker ps -aq --filter label=${REF} | xargs -r docker rm -f >/dev/null; docker volume ls -q --filter label=${REF} | xargs -r docker volume rm -f >/dev/null; docker network rm ${REF} >/dev/null`])
    cleanup()
  }
}

if (import.meta.main) await main()
