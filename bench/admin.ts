/**
 * `bun run bench:admin`: `berth sites list --json` with 1,000 sites (issue 37, part A), through
 * berth serve's admin socket (this build) against the command as it was before, which built the
 * whole composition in its own process and read the store itself (the base commit's binary,
 * /tmp/berth-base, built from 4f6a324 when absent). Also this build's own fallback with no
 * server (the same in-process read, under the data folder's lock), for information.
 *
 * One data folder with one account and 1,000 active sites (made through the repositories, no
 * containers); berth serve runs on it with no Docker engine (a socket path that does not exist),
 * so nothing touches the shared engine. Each command is a fresh process, timed from spawn to
 * exit; ROUNDS interleaved rounds of RUNS each, medians printed, and the ratio base / socket
 * (above 1: the socket is faster).
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { spawnSync } from 'bun'
import { loadConfig } from '../src/config/config'
import { AccountsRepository } from '../src/domain/accounts/repository'
import { BillingRepository } from '../src/domain/billing/repository'
import { PlansRepository } from '../src/domain/plans/repository'
import { SitesRepository } from '../src/domain/sites/repository'
import { systemClock } from '../src/lib/clock'
import { migrate } from '../src/store/migrate'
import { openStore } from '../src/store/store'
import { cleanupOnExit, ROOT, snapshotBinary, startBerth, tempDir } from './processes'
import { median } from './stats'

const SITES = 1_000
const ROUNDS = 3
const RUNS = 5
const BASE_COMMIT = '4f6a324'
const BASE_BINARY = '/tmp/berth-base'
const NO_ENGINE = { BERTH_CONTAINERS_DOCKER_SOCKET: '/nonexistent/docker.sock', BERTH_DNS_LISTEN: 'off', BERTH_CONTAINERS_FIREWALL: 'false' }

cleanupOnExit()

/** The base commit's binary: /tmp/berth-base, or built from a worktree of 4f6a324 at /tmp/base37. */
function baseBinary(): string {
  if (existsSync(BASE_BINARY)) return BASE_BINARY
  const tree = '/tmp/base37'
  if (!existsSync(tree)) run(['git', '-C', ROOT, 'worktree', 'add', '--detach', tree, BASE_COMMIT])
  if (!existsSync(join(tree, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'))
  run(['bun', 'scripts/build.ts'], tree)
  copyFileSync(join(tree, 'dist', 'berth'), BASE_BINARY)
  return BASE_BINARY
}

function run(argv: string[], cwd = ROOT): void {
  const p = spawnSync(argv, { cwd, stdout: 'inherit', stderr: 'inherit' })
  if (p.exitCode !== 0) throw new Error(`${argv.join(' ')} exited ${p.exitCode}`)
}

function seed(dir: string): void {
  const config = loadConfig({ env: { BERTH_SERVER_DATA_DIR: dir }, file: null })
  mkdirSync(config.server.dataDir, { recursive: true })
  const store = openStore(join(config.server.dataDir, 'berth.db'))
  migrate(store)
  new PlansRepository(store, systemClock).seedOnce(config.plans)
  const accounts = new AccountsRepository(store)
  const billing = new BillingRepository(store)
  const sites = new SitesRepository(store)
  const now = Date.now()
  store.write(() => {
    const account = accounts.insert({ id: crypto.randomUUID(), email: 'bench@example.com', name: 'bench', createdAt: now })
    let subscriptionId = ''
    for (let i = 0; i < SITES; i++) {
      if (i % 10 === 0) {
        subscriptionId = billing.insertSubscription({
          id: crypto.randomUUID(), accountId: account.id, planSlug: 'agency', billingPeriod: 'monthly', status: 'active',
          currentPeriodEnd: now + 30 * 86_400_000, amountCents: 3900, processor: 'local', createdAt: now, updatedAt: now,
        }).id
      }
      const site = sites.insert({ id: crypto.randomUUID(), accountId: account.id, subscriptionId, slug: `bench-${String(i).padStart(4, '0')}`, planSlug: 'agency', createdAt: now + i })
      sites.setStatus(site.id, 'active', now + i)
    }
  })
  store.close()
}

/**
 * One `berth sites list --json`: its wall time in ms, checked to list every site. Its standard
 * output goes to a file: the base binary cuts a result of this size short on a pipe (it exits
 * before the pipe is drained; this build writes it whole, cli/command.ts writeAll).
 */
function listOnce(binary: string, dir: string): number {
  // A new file each time: a spawn's stdout file is not truncated.
  const out = join(dir, `list-${crypto.randomUUID()}.json`)
  const started = performance.now()
  const p = spawnSync([binary, 'sites', 'list', '--json', '--data-dir', dir], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', ...NO_ENGINE }, stdout: Bun.file(out), stderr: 'pipe' })
  const ms = performance.now() - started
  if (p.exitCode !== 0) throw new Error(`${binary} sites list exited ${p.exitCode}: ${p.stderr.toString()}`)
  const listed = JSON.parse(readFileSync(out, 'utf8')) as unknown[]
  if (listed.length !== SITES) throw new Error(`${binary} listed ${listed.length} sites, not ${SITES}`)
  rmSync(out)
  return ms
}

const base = baseBinary()
const current = snapshotBinary()
const dir = tempDir('berth-bench-admin-')
seed(dir)
const times = { socket: [] as number[], base: [] as number[], local: [] as number[] }
for (let round = 0; round < ROUNDS; round++) {
  // With no server: this build's fallback, reading the store itself under the lock.
  for (let i = 0; i < RUNS; i++) times.local.push(listOnce(current, dir))
  const serve = await startBerth(dir, 5, NO_ENGINE, current)
  try {
    for (let i = 0; i < RUNS; i++) {
      times.socket.push(listOnce(current, dir))
      // The base binary beside it, as before issue 37: its own composition, reading the store itself.
      times.base.push(listOnce(base, dir))
    }
  } finally {
    await serve.stop()
  }
}
const m = { socket: median(times.socket), base: median(times.base), local: median(times.local) }
const ratio = m.base / m.socket
console.log(`berth sites list --json, ${SITES} sites, ${ROUNDS} rounds x ${RUNS} runs, wall time of the command (median ms):`)
console.log(`  through berth serve's admin socket (this build): ${m.socket.toFixed(0)}`)
console.log(`  in its own process, before issue 37 (${BASE_COMMIT}):  ${m.base.toFixed(0)}`)
console.log(`  in its own process, no server (this build's fallback): ${m.local.toFixed(0)}`)
console.log(`  ratio base / socket: ${ratio.toFixed(2)} (above 1: the socket is faster)`)
