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
  // The engine's die/destroy of a database container: `recovering` and brought back, unless a
  // move told it is leaving that container behind.
  function lifeOver() {
    const rows = [row('main', 'postgres')]
    const states: string[] = []
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
        inspect: async () => ({ containerId: 'new', running: true, sizeBytes: null }),
        ensure: async () => ({ host: 'db-main', port: 5432, version: '15' }),
      } as unknown as DatabaseRuntime,
      plans: { get: () => plan('business', 3, ['postgres']) },
      sites: { find: () => site },
      clock: systemClock,
      log: memoryLogger(),
      opened: () => 'pw',
      busy: () => false,
    })
    return { life, states }
  }
  const event = (action: 'die' | 'destroy', containerId = 'old') => ({ action, siteId: 's1', slug: 'shop', containerId, database: 'main' })

  it('says recovering at the event of its container, and available once it answers again', async () => {
    const { life, states } = lifeOver()
    life.onEvent(event('die'))
    expect(states).toEqual(['recovering'])
    await Bun.sleep(10)
    expect(states).toEqual(['recovering', 'available'])
  })

  it('leaves it available through the removal of a container a move left behind', async () => {
    const { life, states } = lifeOver()
    life.leaving('old')
    life.onEvent(event('die'))
    life.onEvent(event('destroy'))
    await Bun.sleep(10)
    expect(states).toEqual([])
    // Forgotten after its destroy: the same id again is an event like any other.
    life.onEvent(event('die'))
    expect(states).toEqual(['recovering'])
  })
})
