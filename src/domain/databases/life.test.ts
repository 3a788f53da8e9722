import { describe, expect, it } from 'vitest'
import { systemClock } from '../../lib/clock'
import { memoryLogger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import { DomainError } from '../errors'
import type { Plan } from '../plans'
import { DatabaseLife } from './life'
import type { DatabaseRuntime, DbEngine } from './ports'
import type { DatabasesRepository, SiteDatabaseRow } from './repository'

// A plan change that would not hold the site's databases is refused, naming the ones to delete:
// the rule alone (the e2e test/databases-life.e2e.test.ts runs it on the binary).
const site = { id: 's1', slug: 'shop', planSlug: 'business', status: 'active' } as SiteRow
const row = (name: string, engine: DbEngine, state: SiteDatabaseRow['state'] = 'available') => ({ id: name, siteId: 's1', name, engine, state }) as SiteDatabaseRow
const plan = (slug: string, max: number, engines: DbEngine[]) => ({ slug, features: { cpu_cores: 1, databases: { max, engines, memory_mb: 256, disk_gb: 1 } } }) as unknown as Plan

function lifeWith(rows: SiteDatabaseRow[]): DatabaseLife {
  return new DatabaseLife({
    repo: { list: () => rows } as unknown as DatabasesRepository,
    runtime: {} as DatabaseRuntime,
    plans: { get: () => plan('business', 3, ['postgres', 'mariadb', 'redis']) },
    sites: { find: () => site },
    clock: systemClock,
    log: memoryLogger(),
    opened: () => null,
    busy: () => false,
  })
}

function refusal(fn: () => void): DomainError {
  try {
    fn()
  } catch (err) {
    return err as DomainError
  }
  throw new Error('not refused')
}

describe('DatabaseLife.requireFits', () => {
  it('refuses a plan without an engine the site uses, naming the database to delete', () => {
    const err = refusal(() => lifeWith([row('main', 'postgres'), row('cache', 'redis')]).requireFits(site, plan('starter', 1, ['mariadb', 'postgres'])))
    expect(err).toBeInstanceOf(DomainError)
    expect(err).toMatchObject({ kind: 'conflict', field: 'new_plan' })
    expect(err.message).toContain("'cache' (redis)")
    expect(err.message).not.toContain("'main'")
  })

  it('refuses a plan allowing fewer databases than the site has, saying how many to delete', () => {
    const err = refusal(() => lifeWith([row('a', 'postgres'), row('b', 'postgres'), row('c', 'mariadb')]).requireFits(site, plan('starter', 1, ['mariadb', 'postgres'])))
    expect(err).toMatchObject({ kind: 'conflict', field: 'new_plan' })
    expect(err.message).toContain('allows 1 database, and')
    expect(err.message).toContain('has 3; delete 2 first')
  })

  it('counts neither deleted nor failed databases, and lets a plan that holds them pass', () => {
    const life = lifeWith([row('a', 'postgres'), row('old', 'redis', 'deleted'), row('bad', 'redis', 'failed')])
    expect(() => life.requireFits(site, plan('starter', 1, ['mariadb', 'postgres']))).not.toThrow()
  })
})

describe('DatabaseLife.onEvent', () => {
  // The engine's die/destroy of a database container: the truth is looked at once the site's run
  // (a move) is over; only a database with no running container where the site is placed is
  // `recovering` and brought back.
  function lifeOver(running: { containerId: string; running: boolean } | null, runs?: { underWay(): boolean; settled(): Promise<void> }) {
    const rows = [row('main', 'postgres')]
    const states: string[] = []
    const ensured: string[] = []
    const life = new DatabaseLife({
      repo: {
        list: () => rows,
        find: () => rows[0],
        update: (_id: string, change: Partial<SiteDatabaseRow>) => {
          if (change.state) states.push(change.state)
          Object.assign(rows[0]!, change)
        },
      } as unknown as DatabasesRepository,
      runtime: {
        inspect: async () => (running ? { ...running, sizeBytes: null } : null),
        ensure: async (spec: { name: string }) => {
          ensured.push(spec.name)
          running = { containerId: 'new', running: true }
          return { host: 'db-main', port: 5432, version: '15' }
        },
      } as unknown as DatabaseRuntime,
      plans: { get: () => plan('business', 3, ['postgres']) },
      sites: { find: () => site },
      clock: systemClock,
      log: memoryLogger(),
      opened: () => 'pw',
      busy: () => false,
      runs,
    })
    return { life, states, ensured }
  }
  const event = { action: 'destroy' as const, siteId: 's1', slug: 'shop', containerId: 'old', database: 'main' }

  it('leaves a database available when another container serves it (the one a move left was removed)', async () => {
    const { life, states, ensured } = lifeOver({ containerId: 'moved', running: true })
    life.onEvent(event)
    await Bun.sleep(20)
    expect(states).toEqual([])
    expect(ensured).toEqual([])
  })

  it('looks only once the site\'s run under way is over', async () => {
    let over!: () => void
    const settled = new Promise<void>((resolve) => { over = resolve })
    const { life, states } = lifeOver(null, { underWay: () => true, settled: () => settled })
    life.onEvent(event)
    await Bun.sleep(20)
    expect(states).toEqual([])
    over()
    await Bun.sleep(20)
    expect(states).toEqual(['recovering', 'available'])
  })

  it('brings back a database whose container is gone where the site runs', async () => {
    const { life, states, ensured } = lifeOver(null)
    life.onEvent(event)
    await Bun.sleep(20)
    expect(states).toEqual(['recovering', 'available'])
    expect(ensured).toEqual(['main'])
  })
})
