/**
 * `bun run bench:lists`: what a long list costs (issue 22, part 8). Two accounts in one data
 * folder, one with 100 sites and one with 1,000 (made through the repositories, no containers),
 * then the compiled binary on that folder: GET /api/v1/sites/ of each against GET /auth/whoami/
 * in the same run, one request at a time (latency, not throughput), 3 interleaved rounds.
 *
 * Each list is timed twice: read again and again (what an agent polling a quiet box sees: the
 * answer is kept as JSON until the store changes), and fresh, each read right after a change to
 * the store (a DNS record of a third account's site created or deleted, untimed), so that the
 * list is built again every time: five queries, the views, the schema check and the JSON. On a
 * busy box the store changes many times a second, so most real reads are fresh ones. whoami is
 * also timed fresh, for information: what a store change costs any request that follows it.
 *
 * Goals (issue 22), both for the repeated reads and for the fresh ones: the list of 100 within
 * 5 times whoami's median latency (whoami read again and again), and the list of 1,000 within
 * 10 times the list of 100's. Exits 1 if one of the four fails.
 *
 * The sites are `active` but Berth is given no Docker engine (a socket path that does not exist)
 * and one reconcile pass at start: nothing touches the shared engine, and no pass runs while
 * requests are timed.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig } from '../src/config/config'
import { AccountsRepository } from '../src/domain/accounts/repository'
import { BillingRepository } from '../src/domain/billing/repository'
import { DnsRepository } from '../src/domain/dns/repository'
import { DomainsRepository } from '../src/domain/domains/repository'
import { KeysRepository } from '../src/domain/keys/repository'
import { KeysService } from '../src/domain/keys/service'
import { PlansRepository } from '../src/domain/plans/repository'
import { SitesRepository } from '../src/domain/sites/repository'
import { systemClock } from '../src/lib/clock'
import { migrate } from '../src/store/migrate'
import { openStore } from '../src/store/store'
import { BINARY, cleanupOnExit, snapshotBinary, startBerth, tempDir } from './processes'
import { median } from './stats'

const GOALS = { list100OverWhoami: 5, list1000OverList100: 10 }
const ROUNDS = 3
/** Each target's share of a round: requests until this much time or MAX_REQUESTS, after WARMUP requests. */
const ROUND_MS = 3_000
const MAX_REQUESTS = 2_000
const WARMUP = 20
/** The agency plan's room: one subscription per this many sites. */
const SITES_PER_SUBSCRIPTION = 10

interface Target {
  name: string
  path: string
  key: string
  /** Items the answer must hold, or undefined for whoami. */
  items?: number
  /** Change the store (untimed) before each request, so that nothing kept can answer it. */
  fresh?: boolean
}

/** A store change that leaves the measured lists as they are: a record on another account's site, created then deleted. */
interface Writer {
  key: string
  slug: string
  count: number
}

interface Sample {
  medianMs: number
  p95Ms: number
  requests: number
  bytes: number
}

/**
 * Makes an account with `count` active sites under agency subscriptions, as a purchase would
 * leave them: each site with one DNS record, every fourth with a linked domain. Returns its key.
 */
function seedAccount(repos: ReturnType<typeof openRepos>, count: number, stem: string): string {
  const { store, accounts, keys, billing, sites, domains, dns } = repos
  const now = Date.now()
  return store.write(() => {
    const account = accounts.insert({ id: crypto.randomUUID(), email: `${stem}@example.com`, name: stem, createdAt: now })
    const key = keys.issue(account.id, 'bench', ['read', 'write', 'admin'])
    let subscriptionId = ''
    for (let i = 0; i < count; i++) {
      if (i % SITES_PER_SUBSCRIPTION === 0) {
        subscriptionId = billing.insertSubscription({
          id: crypto.randomUUID(), accountId: account.id, planSlug: 'agency', billingPeriod: 'monthly', status: 'active',
          currentPeriodEnd: now + 30 * 86_400_000, amountCents: 3900, processor: 'local', createdAt: now, updatedAt: now,
        }).id
      }
      const slug = `${stem}-${String(i).padStart(4, '0')}`
      const site = sites.insert({ id: crypto.randomUUID(), accountId: account.id, subscriptionId, slug, planSlug: 'agency', createdAt: now + i })
      sites.setStatus(site.id, 'active', now + i)
      dns.insert({ siteId: site.id }, { type: 'TXT', subdomain: '', value: `"v=spf1 -all"`, ttl: 3600 }, now)
      if (i % 4 === 0) {
        domains.insert({
          id: crypto.randomUUID(), accountId: account.id, name: `${slug}.com`, status: 'active', registrar: 'sandbox', sandbox: true, registrarRef: slug,
          expiresAt: now + 365 * 86_400_000, autoRenew: true, locked: true, privacy: true, nameservers: '["ns1.localhost","ns2.localhost"]', siteId: site.id,
          renewCents: 1800, freeFirstYear: false, contact: '{}', caLegalType: null, renewError: null, createdAt: now, updatedAt: now,
        })
      }
    }
    return key.api_key
  })
}

function openRepos(dir: string) {
  const config = loadConfig({ env: { BERTH_SERVER_DATA_DIR: dir }, file: null })
  const store = openStore(join(config.server.dataDir, 'berth.db'))
  migrate(store)
  new PlansRepository(store, systemClock).seedOnce(config.plans)
  return {
    store,
    accounts: new AccountsRepository(store),
    keys: new KeysService(new KeysRepository(store), store, systemClock, config.brand.prefix),
    billing: new BillingRepository(store),
    sites: new SitesRepository(store),
    domains: new DomainsRepository(store),
    dns: new DnsRepository(store),
  }
}

/** One request at a time for ROUND_MS (at most MAX_REQUESTS): latencies from send to last byte. */
async function measure(url: string, target: Target, writer: Writer): Promise<Sample> {
  const headers = { authorization: `Bearer ${target.key}` }
  const change = async () => {
    const action = writer.count++ % 2 === 0 ? 'create' : 'delete'
    const res = await fetch(`${url}/api/v1/sites/${writer.slug}/dns/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${writer.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ action, type: 'A', subdomain: 'bench', value: '192.0.2.1' }),
    })
    if (res.status !== 200) throw new Error(`the store change answered ${res.status}: ${await res.text()}`)
    await res.arrayBuffer()
  }
  const get = async () => {
    if (target.fresh) await change()
    const res = await fetch(`${url}${target.path}`, { headers })
    const body = await res.text()
    if (res.status !== 200) throw new Error(`${target.name} answered ${res.status}: ${body.slice(0, 300)}`)
    return body
  }
  for (let i = 0; i < WARMUP; i++) await get()
  const first = JSON.parse(await get()) as { data: unknown[] }
  if (target.items !== undefined && first.data.length !== target.items) throw new Error(`${target.name} listed ${first.data.length} sites, not ${target.items}`)
  const latencies: number[] = []
  let bytes = 0
  const end = performance.now() + ROUND_MS
  while (performance.now() < end && latencies.length < MAX_REQUESTS) {
    if (target.fresh) await change()
    const started = performance.now()
    const res = await fetch(`${url}${target.path}`, { headers })
    const body = await res.text()
    if (res.status !== 200) throw new Error(`${target.name} answered ${res.status}: ${body.slice(0, 300)}`)
    bytes = body.length
    latencies.push(performance.now() - started)
  }
  latencies.sort((a, b) => a - b)
  return { medianMs: median(latencies), p95Ms: latencies[Math.floor(latencies.length * 0.95)]!, requests: latencies.length, bytes }
}

async function main() {
  if (!existsSync(BINARY)) throw new Error('dist/berth is missing; run bun run build first')
  cleanupOnExit()
  snapshotBinary()
  const dir = tempDir('berth-bench-lists-')
  const repos = openRepos(dir)
  const seeding = performance.now()
  const small = seedAccount(repos, 100, 'small')
  const large = seedAccount(repos, 1_000, 'large')
  const writer: Writer = { key: seedAccount(repos, 1, 'writer'), slug: 'writer-0000', count: 0 }
  repos.store.close()
  console.log(`seeded 1,100 sites in ${Math.round(performance.now() - seeding)} ms`)
  const berth = await startBerth(dir, 2, {
    BERTH_CONTAINERS_DOCKER_SOCKET: join(dir, 'no-engine.sock'),
    BERTH_CONTAINERS_RECONCILE_SECONDS: '86400',
  })
  try {
    // The start-up reconcile pass (500 ms after the listener opens) fails fast on every site without an engine.
    await Bun.sleep(2_000)
    const targets: Target[] = [
      { name: 'GET /auth/whoami/', path: '/api/v1/auth/whoami/', key: small },
      { name: 'GET /sites/ (100)', path: '/api/v1/sites/', key: small, items: 100 },
      { name: 'GET /sites/ (1,000)', path: '/api/v1/sites/', key: large, items: 1_000 },
      { name: 'fresh whoami', path: '/api/v1/auth/whoami/', key: small, fresh: true },
      { name: 'fresh (100)', path: '/api/v1/sites/', key: small, items: 100, fresh: true },
      { name: 'fresh (1,000)', path: '/api/v1/sites/', key: large, items: 1_000, fresh: true },
    ]
    console.log(`one request at a time, ${WARMUP} warm-up + ${ROUND_MS / 1000} s (at most ${MAX_REQUESTS}) per target, ${ROUNDS} rounds`)
    const samples = new Map<string, Sample[]>(targets.map((t) => [t.name, []]))
    for (let round = 1; round <= ROUNDS; round++) {
      for (const target of targets) {
        const s = await measure(berth.url, target, writer)
        samples.get(target.name)!.push(s)
        console.log(`  round ${round}/${ROUNDS} ${target.name.padEnd(20)} median ${s.medianMs.toFixed(2).padStart(7)} ms  p95 ${s.p95Ms.toFixed(2).padStart(7)} ms  ${s.requests} requests, ${Math.round(s.bytes / 1024)} KiB each`)
      }
    }
    const med = (name: string, f: (s: Sample) => number) => median(samples.get(name)!.map(f))
    console.log('\ntarget                median ms   p95 ms  (median of rounds)')
    for (const t of targets) console.log(`${t.name.padEnd(20)} ${med(t.name, (s) => s.medianMs).toFixed(2).padStart(10)} ${med(t.name, (s) => s.p95Ms).toFixed(2).padStart(8)}`)
    const ratio = (a: string, b: string) => median(samples.get(a)!.map((s, i) => s.medianMs / samples.get(b)![i]!.medianMs))
    const [whoami, list100, list1000, freshWhoami, fresh100, fresh1000] = targets.map((t) => t.name) as [string, string, string, string, string, string]
    const checks = [
      { label: 'list of 100 / whoami', value: ratio(list100, whoami), goal: GOALS.list100OverWhoami },
      { label: 'list of 1,000 / list of 100', value: ratio(list1000, list100), goal: GOALS.list1000OverList100 },
      { label: 'fresh 100 / whoami', value: ratio(fresh100, whoami), goal: GOALS.list100OverWhoami },
      { label: 'fresh 1,000 / fresh 100', value: ratio(fresh1000, fresh100), goal: GOALS.list1000OverList100 },
    ]
    console.log('\nratio of medians (median of rounds)')
    for (const c of checks) console.log(`${c.label.padEnd(28)} ${c.value.toFixed(2).padStart(6)}  ≤ ${c.goal}: ${c.value <= c.goal ? 'PASS' : 'FAIL'}`)
    console.log(`${'fresh 100 / fresh whoami'.padEnd(28)} ${ratio(fresh100, freshWhoami).toFixed(2).padStart(6)}  (for information: both after a store change)`)
    if (checks.some((c) => c.value > c.goal)) process.exitCode = 1
  } finally {
    await berth.stop()
  }
}

await main()
