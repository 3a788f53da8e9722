import { afterEach, describe, expect, it, vi } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../config/config'
import { ManualClock } from '../../lib/clock'
import { migrate } from '../../store/migrate'
import { openStore, type Store } from '../../store/store'
import { PlansRepository } from './repository'
import { PlansService } from './service'

const dirs: string[] = []
const stores: Store[] = []
afterEach(() => {
  for (const s of stores.splice(0)) s.close()
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function catalog() {
  const dir = mkdtempSync(join(tmpdir(), 'berth-plans-'))
  dirs.push(dir)
  const config = loadConfig({ env: { BERTH_SERVER_DATA_DIR: dir }, file: null })
  const store = openStore(join(dir, 'berth.db'))
  stores.push(store)
  migrate(store)
  const repo = new PlansRepository(store, new ManualClock(Date.UTC(2026, 10, 1)))
  repo.seedOnce(config.plans)
  const reads = vi.spyOn(repo, 'all')
  return { store, repo, reads, plans: new PlansService(repo, store, 'berth'), slug: config.plans[0]!.slug, path: join(dir, 'berth.db') }
}

describe('the plan catalog in memory', () => {
  it('is read once, and not again when something else in the store changes (each fresh GET /sites/ did)', () => {
    const { store, plans, reads, slug } = catalog()
    plans.get(slug)
    store.write(() => store.sqlite.exec(`INSERT INTO settings (key, value) VALUES ('unrelated', 'x')`))
    plans.get(slug)
    plans.list()
    expect(reads).toHaveBeenCalledTimes(1)
  })

  it('shows a plan changed by this process at once', () => {
    const { plans, slug } = catalog()
    expect(plans.get(slug).deprecated).toBe(false)
    plans.setDeprecated(slug, true)
    expect(plans.get(slug).deprecated).toBe(true)
    expect(plans.list().map((p) => p.slug)).not.toContain(slug)
  })
})
