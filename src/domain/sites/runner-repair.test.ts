import { afterAll, describe, expect, it } from 'vitest'
import { domainStore } from '../../../test/helpers/domain-store'
import { RecordingRuntime } from '../../../test/helpers/recording-runtime'
import { waitForAnswer } from '../../drivers/runtime/first-answer'
import { ArchivesRepository } from '../archives/repository'
import { SitesRepository } from './repository'
import { SiteRunner } from './runner'

/**
 * Whether this process may start a site it did not set out to change (SiteRunner.repair, what
 * the healer and the reconcile pass call): on a real SQLite store whose archives say which
 * site is being restored, and the recording runtime.
 */
const runtime = new RecordingRuntime()
afterAll(() => runtime.close())
const IMAGES = { shared: 'berth/static:1', vps: 'berth/php:1', dedicated: 'berth/php:1' }

function setup() {
  const t = domainStore()
  const sites = new SitesRepository(t.store, { planHasSsh: (plan) => t.plans.get(plan).features.ssh, range: { first: 2200, last: 2210 }, isFree: () => true })
  const archives = new ArchivesRepository(t.store)
  const runner = new SiteRunner({
    sites, plans: t.plans, runtime, containers: { images: IMAGES, appImage: 'berth/app:1', pidsLimit: 512 }, log: t.log, waitForAnswer,
    restoring: (siteId) => archives.restoringOf(siteId) !== undefined,
  })
  const accountId = t.account()
  const site = () => sites.insert({ id: crypto.randomUUID(), accountId, subscriptionId: null, slug: `p${Math.random().toString(36).slice(2, 10)}`, planSlug: 'starter', createdAt: t.clock.now() })
  /** An archive of the site being put back on it, as a restore (or a move's restore) claims it. */
  const restoring = (siteId: string) => {
    const id = crypto.randomUUID()
    archives.insert({ id, siteId, kind: 'snapshot', storageKey: `${id}.tar.zst`, createdAt: t.clock.now() })
    archives.transition(id, ['creating'], { status: 'restoring' })
    return { done: () => archives.transition(id, ['restoring'], { status: 'ready' }) }
  }
  return { ...t, runner, site, restoring, starts: (slug: string) => runtime.callsOf('ensureSite', slug).length }
}

describe('a repair (the healer, the reconcile pass)', () => {
  it('does not start a site whose files are being restored; the restore’s own run does, and repairs resume after it', async () => {
    const t = setup()
    const s = t.site()
    const restore = t.restoring(s.id)
    expect(await t.runner.repair(s)).toBeNull()
    expect(t.starts(s.slug)).toBe(0)
    expect(t.runner.isUp(s.slug)).toBe(false)
    // The restore brings the site back itself, through the same runner.
    await t.runner.run(s)
    expect(t.starts(s.slug)).toBe(1)
    restore.done()
    t.runner.markDown(s.slug)
    expect(await t.runner.repair(s)).not.toBeNull()
    expect(t.starts(s.slug)).toBe(2)
    expect(t.runner.isUp(s.slug)).toBe(true)
  })

  it('leaves a site alone while a run or a hold of it (a move) is under way here, and starts it once that ended', async () => {
    const t = setup()
    const s = t.site()
    const { promise: released, resolve: release } = Promise.withResolvers<void>()
    const move = t.runner.holding(s.slug, () => released)
    expect(await t.runner.repair(s)).toBeNull()
    expect(t.starts(s.slug)).toBe(0)
    release()
    await move
    expect(await t.runner.repair(s)).not.toBeNull()
    expect(t.starts(s.slug)).toBe(1)
  })

  it('starts a site that should run and is not being restored, as run does', async () => {
    const t = setup()
    const s = t.site()
    const other = t.site()
    t.restoring(other.id)
    const endpoint = await t.runner.repair(s, { waitForAnswer: true })
    expect(endpoint).toEqual(t.runner.knownEndpoint(s.slug))
    expect(runtime.callsOf('ensureSite', s.slug)).toEqual([{ op: 'ensureSite', slug: s.slug, spec: t.runner.spec(s) }])
  })
})
