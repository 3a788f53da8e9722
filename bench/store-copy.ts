/**
 * `bun run bench:store-copy`: how long the store's copy for the copies off the box holds the
 * event loop, on a store of 5,000 sites (accounts, two keys and four DNS records each, 7 backups
 * with their jobs, 90 days of metrics: ~97 MB). The reference, in the same run: `VACUUM INTO` on
 * the main thread, as a plain `store.sqlite.exec` would do it. Berth's way (store/copy.ts): the
 * same statement on a connection of its own in a worker thread. A 2 ms timer measures the longest
 * gap of the event loop while each copy is made; three rounds each, alternating which goes first.
 */
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { migrate } from '../src/store/migrate'
import { openStore } from '../src/store/store'
import { StoreCopies } from '../src/store/copy'

const SITES = 5000
const dir = mkdtempSync(join(tmpdir(), 'berth-bench-store-copy-'))
const path = join(dir, 'berth.db')

function fill(): void {
  const store = openStore(path)
  migrate(store)
  const db = store.sqlite
  const now = Date.now()
  db.exec('BEGIN')
  db.prepare("insert into plans (slug,name,track,hosting_type,price_monthly_cents,price_annual_cents,max_sites,ai_modules,free_domain_annual,memory_mb,cpu_cores,disk_gb,position,created_at,updated_at) values ('p','p','single_site','shared',1,1,1,'[]',0,1,1,1,1,1,1)").run()
  const account = db.prepare('insert into accounts (id,email,name,created_at,updated_at) values (?,?,?,?,?)')
  const site = db.prepare("insert into sites (id,account_id,slug,plan_slug,status,created_at,updated_at) values (?,?,?,'p','active',?,?)")
  const key = db.prepare('insert into api_keys (id,account_id,name,prefix,key_hash,scopes,created_at) values (?,?,?,?,?,?,?)')
  const archive = db.prepare("insert into archives (id,site_id,kind,status,storage_key,size_bytes,file_count,created_at,completed_at) values (?,?,'backup','ready',?,1000,10,?,?)")
  const job = db.prepare("insert into jobs (id,kind,subject_id,status,run_after,created_at,updated_at) values (?,'create_archive',?,'succeeded',?,?,?)")
  const metric = db.prepare("insert into site_metrics_daily (site_id,day,requests,bytes_out,latency) values (?,?,100,1000,'[1,2,3,4,5,6,7,8]')")
  const dns = db.prepare("insert into dns_records (id,site_id,type,subdomain,value,ttl,created_at) values (?,?,'A',?,'192.0.2.1',300,?)")
  for (let i = 0; i < SITES; i++) {
    const a = crypto.randomUUID()
    const s = crypto.randomUUID()
    account.run(a, `a${i}@example.com`, 'Agent', now, now)
    site.run(s, a, `site-${i}`, now, now)
    for (let k = 0; k < 2; k++) key.run(crypto.randomUUID(), a, 'k', 'berth_x', `${crypto.randomUUID()}${k}`, '["read","write"]', now)
    for (let k = 0; k < 7; k++) {
      const id = crypto.randomUUID()
      archive.run(id, s, `${s}/${id}.tar.zst`, now, now)
      job.run(crypto.randomUUID(), id, now, now, now)
    }
    for (let d = 0; d < 90; d++) metric.run(s, new Date(Date.UTC(2026, 0, 1 + d)).toISOString().slice(0, 10))
    for (let k = 0; k < 4; k++) dns.run(crypto.randomUUID(), s, `w${k}`, now)
  }
  db.exec('COMMIT')
  store.close()
}

/** Runs `copy` while a 2 ms timer watches the event loop: the copy's time and the longest gap. */
async function watch(copy: () => Promise<void> | void): Promise<{ ms: number; gap: number }> {
  let last = performance.now()
  let gap = 0
  const timer = setInterval(() => {
    const now = performance.now()
    gap = Math.max(gap, now - last)
    last = now
  }, 2)
  await Bun.sleep(20)
  const started = performance.now()
  await copy()
  const ms = performance.now() - started
  await Bun.sleep(20)
  clearInterval(timer)
  return { ms, gap }
}

fill()
console.log(`store: ${SITES} sites, ${(Bun.file(path).size / 1e6).toFixed(0)} MB`)
const live = new Database(path)
live.exec('PRAGMA journal_mode = WAL')
const copies = new StoreCopies(path, join(dir, 'work'))
const mainThread = async () => {
  const to = join(dir, 'main.db')
  rmSync(to, { force: true })
  live.prepare('VACUUM INTO ?').run(to)
}
const worker = async () => {
  const copy = await copies.take()
  await copy.discard()
}
const rows: { way: string; ms: number; gap: number }[] = []
for (let round = 0; round < 3; round++) {
  const order = round % 2 === 0 ? [['main thread', mainThread], ['worker', worker]] as const : [['worker', worker], ['main thread', mainThread]] as const
  for (const [way, copy] of order) rows.push({ way, ...(await watch(copy)) })
}
for (const way of ['main thread', 'worker']) {
  const mine = rows.filter((r) => r.way === way)
  console.log(`${way.padEnd(12)} copy ms: ${mine.map((r) => r.ms.toFixed(0)).join(', ')}   longest event-loop gap ms: ${mine.map((r) => r.gap.toFixed(0)).join(', ')}`)
}
const gapOf = (way: string) => Math.max(...rows.filter((r) => r.way === way).map((r) => r.gap))
console.log(`longest gap, worker / main thread: ${(gapOf('worker') / gapOf('main thread')).toFixed(3)}`)
live.close()
rmSync(dir, { recursive: true, force: true })
