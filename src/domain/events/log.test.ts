import { describe, expect, it } from 'vitest'
import { domainStore } from '../../../test/helpers/domain-store'
import { EVENT_RETENTION_DAYS, EventLog } from './log'
import type { EventRow } from '../../store/schema'

/**
 * The event log on a real store with the migrations applied: an event is recorded with the change
 * it tells of (and goes with it when the change is rolled back), in order, per account and site,
 * the in-transaction hooks run with it, and the listeners hear of it once it is committed.
 */
function setup() {
  const t = domainStore()
  const events = new EventLog({ store: t.store, clock: t.clock, log: t.log })
  return { t, events }
}

const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 0))

describe('EventLog', () => {
  it('records an event with an evt_ id, its account, site, slug, data and time, listed oldest first', () => {
    const { t, events } = setup()
    const a = t.account()
    const first = events.record({ type: 'site.active', accountId: a, siteId: 'site-1', siteSlug: 'blog', data: { slug: 'blog', status: 'active' } })
    t.clock.advance(1000)
    const second = events.record({ type: 'key.created', accountId: a, data: { id: 'k1', name: 'ci' } })
    expect(first.id).toMatch(/^evt_[0-9a-f]{24}$/)
    expect(second.seq).toBeGreaterThan(first.seq)
    const listed = events.list({ accountId: a, limit: 10 })
    expect(listed.map((e) => e.id)).toEqual([first.id, second.id])
    expect(listed[0]).toMatchObject({ type: 'site.active', accountId: a, siteId: 'site-1', siteSlug: 'blog', createdAt: Date.UTC(2026, 10, 1) })
    expect(JSON.parse(listed[0]!.data)).toEqual({ slug: 'blog', status: 'active' })
    expect(events.find(a, first.id)?.seq).toBe(first.seq)
  })

  it('lists after a cursor, by site and by type, and never another account\'s', () => {
    const { t, events } = setup()
    const a = t.account()
    const b = t.account(null, 'bob@example.com')
    const e1 = events.record({ type: 'site.active', accountId: a, siteId: 's1', siteSlug: 'one', data: {} })
    const e2 = events.record({ type: 'deployment.succeeded', accountId: a, siteId: 's2', siteSlug: 'two', data: {} })
    const e3 = events.record({ type: 'site.down', accountId: a, siteId: 's1', siteSlug: 'one', data: {} })
    const other = events.record({ type: 'site.active', accountId: b, siteId: 's9', siteSlug: 'nine', data: {} })
    expect(events.list({ accountId: a, afterSeq: e1.seq, limit: 10 }).map((e) => e.id)).toEqual([e2.id, e3.id])
    expect(events.list({ accountId: a, siteId: 's1', limit: 10 }).map((e) => e.id)).toEqual([e1.id, e3.id])
    expect(events.list({ accountId: a, types: ['site.down', 'deployment.succeeded'], limit: 10 }).map((e) => e.id)).toEqual([e2.id, e3.id])
    expect(events.list({ accountId: a, limit: 2 }).map((e) => e.id)).toEqual([e1.id, e2.id])
    expect(events.find(a, other.id)).toBeUndefined()
    expect(events.list({ accountId: b, limit: 10 }).map((e) => e.id)).toEqual([other.id])
  })

  it('runs the onRecord hooks in the transaction of the change: a rolled-back change leaves no event, and the listeners hear nothing of it', async () => {
    const { t, events } = setup()
    const a = t.account()
    const hooked: string[] = []
    events.onRecord((e) => hooked.push(e.type))
    const heard: EventRow[] = []
    events.onCommitted((e) => heard.push(e))
    expect(() => t.store.write(() => {
      events.record({ type: 'payment.failed', accountId: a, data: {} })
      throw new Error('the change failed after its event')
    })).toThrow('the change failed')
    expect(hooked).toEqual(['payment.failed'])
    expect(events.list({ accountId: a, limit: 10 })).toEqual([])
    await tick()
    expect(heard).toEqual([])

    // A hook that throws takes the event and the change with it.
    events.onRecord((e) => { if (e.type === 'key.revoked') throw new Error('hook refused') })
    expect(() => events.record({ type: 'key.revoked', accountId: a, data: {} })).toThrow('hook refused')
    expect(events.list({ accountId: a, limit: 10 })).toEqual([])
  })

  it('wakes the onCommitted listeners after the commit, not inside the transaction, until they unsubscribe', async () => {
    const { t, events } = setup()
    const a = t.account()
    const heard: string[] = []
    const stop = events.onCommitted((e) => {
      // Read from outside the transaction: the event is committed when a listener hears of it.
      expect(events.find(a, e.id)).toBeDefined()
      heard.push(e.type)
    })
    t.store.write(() => {
      events.record({ type: 'site.suspended', accountId: a, data: {} })
      events.record({ type: 'site.resumed', accountId: a, data: {} })
      expect(heard).toEqual([])
    })
    await tick()
    expect(heard).toEqual(['site.suspended', 'site.resumed'])
    stop()
    events.record({ type: 'site.deleted', accountId: a, data: {} })
    await tick()
    expect(heard).toEqual(['site.suspended', 'site.resumed'])
  })

  it('prunes the events older than 30 days', () => {
    const { t, events } = setup()
    const a = t.account()
    const old = events.record({ type: 'site.active', accountId: a, data: {} })
    t.clock.advance(EVENT_RETENTION_DAYS * 86_400_000 - 1000)
    const recent = events.record({ type: 'site.down', accountId: a, data: {} })
    t.clock.advance(2000)
    expect(events.prune(t.clock.now())).toBe(1)
    expect(events.list({ accountId: a, limit: 10 }).map((e) => e.id)).toEqual([recent.id])
    expect(events.find(a, old.id)).toBeUndefined()
  })
})
