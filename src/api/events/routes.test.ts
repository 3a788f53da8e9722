import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buyInProcess } from '../../../test/helpers/home-runtime'
import { inProcess } from '../../../test/helpers/in-process'
import type { EventType } from '../../domain/events'
import { runMaintenance } from '../../compose'

/**
 * The event log's API (issue 41, Deliver item 2) in-process: real Requests through the app on a
 * real SQLite file. Events are recorded through the EventLog as a state change records them (the
 * changes' own recording is tested where each happens).
 */
const h = inProcess()
type Site = { slug: string; key: string; siteId: string; accountId: string }
let one: Site
let two: Site
let stranger: Site
beforeAll(async () => {
  const bought = await Promise.all([buyInProcess(h, 'svc_starter_monthly', 'eva'), buyInProcess(h, 'svc_starter_monthly', 'evs')])
  const accountOf = async (key: string) => (await h.call('GET', '/api/v1/auth/whoami/', { key })).json.data.user.id as string
  one = { ...bought[0]!, accountId: await accountOf(bought[0]!.key) }
  stranger = { ...bought[1]!, accountId: await accountOf(bought[1]!.key) }
  // A second site in the first account.
  const created = await h.call('POST', '/api/v1/acp/checkouts/', { key: one.key, body: { sku: 'svc_starter_monthly' }, headers: { 'x-forwarded-for': '198.51.100.7' } })
  const { id, checkout_secret: secret } = created.json.data
  const slug = `evb-${Math.random().toString(36).slice(2, 8)}`
  await h.call('POST', `/api/v1/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: slug } })
  const done = await h.call('POST', `/api/v1/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
  expect(done.status, done.text).toBe(201)
  await h.services.jobs.drain()
  two = { slug, key: one.key, accountId: one.accountId, siteId: (h.services.store.sqlite.query('SELECT id FROM sites WHERE slug = ?').get(slug) as { id: string }).id }
})
afterAll(() => h.close())

const log = () => h.services.events
/** The listeners that are always there (the webhook sender's wake-up): a long poll's own come and go on top of them. */
const STANDING = h.services.events.listening
const record = (site: Site | null, type: EventType, data: Record<string, unknown> = {}, account = site?.accountId ?? one.accountId) =>
  log().record({ type, accountId: account, siteId: site?.siteId ?? null, siteSlug: site?.slug ?? null, data })
const events = (query: string, key = one.key) => h.call('GET', `/api/v1/events/${query}`, { key })
/** The newest event of the first account: where a test's own events begin. */
const cursor = () => log().list({ accountId: one.accountId, limit: 100_000 }).at(-1)?.id

describe('GET /events/', () => {
  it('pages through 1,000 events oldest first with next_after: none missing, none repeated', async () => {
    const start = cursor()
    const recorded: string[] = []
    h.services.store.write(() => {
      for (let i = 0; i < 1000; i++) recorded.push(record(i % 3 === 0 ? two : i % 3 === 1 ? one : null, i % 2 ? 'deployment.succeeded' : 'site.up', { n: i }).id)
      // Another account's, in between: never in this account's pages.
      record(stranger, 'site.down')
    })
    const seen: string[] = []
    let after = start
    let pages = 0
    for (;;) {
      const page = await events(`?limit=100${after ? `&after=${after}` : ''}`)
      expect(page.status, page.text).toBe(200)
      pages++
      seen.push(...page.json.data.events.map((e: { id: string }) => e.id))
      after = page.json.data.next_after
      if (!page.json.data.has_more) break
    }
    expect(pages).toBe(10)
    expect(seen).toEqual(recorded)
    expect(new Set(seen).size).toBe(1000)
    // Past the end: an empty page that keeps the cursor, so the next ask starts where this one did.
    const end = await events(`?after=${after}`)
    expect(end.json.data).toEqual({ events: [], has_more: false, next_after: after })
  })

  it('shows each event with its id, type, time, account, site slug and data; 50 by default', async () => {
    const start = cursor()!
    const made = record(two, 'deployment.failed', { id: 'dep-1', status: 'failed', error: 'npm ci exited 1' })
    const page = await events(`?after=${start}`)
    expect(page.json.data.events).toEqual([{ id: made.id, type: 'deployment.failed', created_at: new Date(made.createdAt).toISOString(), account_id: one.accountId, site: two.slug, data: { id: 'dep-1', status: 'failed', error: 'npm ci exited 1' } }])
    const all = await events('')
    expect(all.json.data.events).toHaveLength(50)
    expect(all.json.data.has_more).toBe(true)
  })

  it('filters by types and by site', async () => {
    const start = cursor()!
    const a = record(one, 'site.down')
    record(two, 'site.down')
    const c = record(one, 'site.up')
    record(null, 'key.created')
    const bySite = await events(`?after=${start}&site=${one.slug}`)
    expect(bySite.json.data.events.map((e: { id: string }) => e.id)).toEqual([a.id, c.id])
    const byType = await events(`?after=${start}&types=site.up,key.created`)
    expect(byType.json.data.events.map((e: { type: string }) => e.type)).toEqual(['site.up', 'key.created'])
    const both = await events(`?after=${start}&types=site.down&site=${one.slug}`)
    expect(both.json.data.events.map((e: { id: string }) => e.id)).toEqual([a.id])
  })

  it('a site-scoped key sees its own site\'s events only; another account sees none of them', async () => {
    // The key first (its own key.created is one of its site's events), then its cursor: one of its
    // own site's events (another's is not one it can see).
    const siteKey = h.services.keys.issue(one.accountId, 'site one', ['read'], one.siteId).api_key
    const start = record(one, 'site.up').id
    const mine = record(one, 'site.suspended')
    const sibling = record(two, 'site.suspended')
    const account = record(null, 'payment.failed')
    const scoped = await events(`?after=${start}`, siteKey)
    expect(scoped.status, scoped.text).toBe(200)
    expect(scoped.json.data.events.map((e: { id: string }) => e.id)).toEqual([mine.id])
    expect((await events(`?site=${one.slug}&after=${start}`, siteKey)).json.data.events.map((e: { id: string }) => e.id)).toEqual([mine.id])
    // Its sibling site is as missing to it as any other; and so is a cursor from the sibling.
    const other = await events(`?site=${two.slug}`, siteKey)
    expect(other.status, other.text).toBe(404)
    expect(other.json.error).toMatchObject({ code: 'NOT_FOUND', param: 'site' })
    expect((await events(`?after=${sibling.id}`, siteKey)).json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'after' })

    // Another account: none of these, its site filter on our site is 404, our cursor unknown.
    const theirs = await events('', stranger.key)
    expect(theirs.status).toBe(200)
    const ids = theirs.json.data.events.map((e: { id: string }) => e.id)
    for (const id of [mine.id, sibling.id, account.id]) expect(ids).not.toContain(id)
    expect(theirs.json.data.events.every((e: { account_id: string }) => e.account_id === stranger.accountId)).toBe(true)
    const foreignSite = await events(`?site=${one.slug}`, stranger.key)
    expect(foreignSite.status).toBe(404)
    expect(foreignSite.json.error).toMatchObject({ code: 'NOT_FOUND', param: 'site' })
    expect((await events(`?after=${mine.id}`, stranger.key)).json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'after' })
  })

  it('needs a key with the read scope', async () => {
    expect((await h.call('GET', '/api/v1/events/')).status).toBe(401)
    const writeOnly = h.services.keys.issue(one.accountId, 'write only', ['write']).api_key
    const refused = await events('', writeOnly)
    expect(refused.status).toBe(403)
    expect(refused.json.error.code).toBe('FORBIDDEN')
  })

  it.each([
    ['after=evt_000000000000000000000000', 'after', 'No event'],
    ['after=nonsense', 'after', 'No event'],
    ['types=site.exploded', 'types', "Unknown event type 'site.exploded'"],
    ['types=site.up,,nope', 'types', "Unknown event type 'nope'"],
    ['types=,', 'types', 'types is empty'],
    ['limit=0', 'limit', ''],
    ['limit=101', 'limit', ''],
    ['limit=ten', 'limit', ''],
    ['wait=61', 'wait', ''],
    ['wait=-1', 'wait', ''],
  ])('%s answers 422 with param %s', async (query, param, says) => {
    const res = await events(`?${query}`)
    expect(res.status, res.text).toBe(422)
    expect(res.json.error).toMatchObject({ code: 'VALIDATION_ERROR', param })
    expect(res.json.error.message).toContain(says)
  })
})

describe('wait', () => {
  it('holds the request until an event is committed and answers within 100 ms of it', async () => {
    const start = cursor()!
    const asked = Date.now()
    let answeredAt = 0
    const pending = events(`?after=${start}&wait=10`).then((r) => {
      answeredAt = Date.now()
      return r
    })
    await new Promise((r) => setTimeout(r, 300))
    expect(answeredAt).toBe(0)
    const made = h.services.store.write(() => record(one, 'site.up', { status: 'active' }))
    const committedAt = Date.now()
    const res = await pending
    expect(res.status, res.text).toBe(200)
    expect(res.json.data.events.map((e: { id: string }) => e.id)).toEqual([made.id])
    expect(committedAt - asked).toBeGreaterThanOrEqual(300)
    expect(answeredAt - committedAt).toBeLessThan(100)
    expect(log().listening).toBe(STANDING)
  })

  it('is not woken by an event it does not ask for (another type, site or account)', async () => {
    const start = cursor()!
    const pending = events(`?after=${start}&wait=10&types=site.down&site=${one.slug}`)
    let done = false
    void pending.then(() => (done = true))
    await new Promise((r) => setTimeout(r, 50))
    record(one, 'site.up')
    record(two, 'site.down')
    record(stranger, 'site.down')
    await new Promise((r) => setTimeout(r, 150))
    expect(done).toBe(false)
    const wanted = record(one, 'site.down')
    const res = await pending
    expect(res.json.data.events.map((e: { id: string }) => e.id)).toEqual([wanted.id])
  })

  it('holds at most 20 long polls per account: one more is 429 with Retry-After and param wait; another account and a plain read are not held back', async () => {
    const start = cursor()!
    const held = Array.from({ length: 20 }, () => events(`?after=${start}&wait=10&types=webhook_endpoint.disabled`))
    await new Promise((r) => setTimeout(r, 200))
    const refused = await events(`?after=${start}&wait=10`)
    expect(refused.status, refused.text).toBe(429)
    expect(refused.json.error).toMatchObject({ code: 'RATE_LIMITED', param: 'wait' })
    expect(refused.json.error.message).toMatch(/20 long polls/)
    expect(refused.headers.get('retry-after')).toBe('5')
    const next = await h.call('GET', `/api/v1/events/next/?after=${start}&timeout_seconds=5`, { key: one.key })
    expect([next.status, next.json.error.param]).toEqual([429, 'timeout_seconds'])
    // Without wait it answers; another account holds its own.
    expect((await events(`?after=${start}`)).status).toBe(200)
    const theirs = events(`?wait=1&types=webhook_endpoint.disabled`, stranger.key)
    // One of the 20 answered: its place is free again.
    const made = record(one, 'webhook_endpoint.disabled')
    for (const res of await Promise.all(held)) expect(res.json.data.events.map((e: { id: string }) => e.id)).toEqual([made.id])
    expect((await theirs).status).toBe(200)
    const again = await events(`?after=${made.id}&wait=1`)
    expect(again.status, again.text).toBe(200)
    expect(log().listening).toBe(STANDING)
  })

  it('answers an empty page when the time runs out, and leaves no listener behind', async () => {
    const start = cursor()!
    const asked = Date.now()
    const res = await events(`?after=${start}&wait=1`)
    expect(Date.now() - asked).toBeGreaterThanOrEqual(990)
    expect(res.json.data).toEqual({ events: [], has_more: false, next_after: start })
    expect(log().listening).toBe(STANDING)
  })

  it('answers at once when events already match', async () => {
    const start = cursor()!
    record(one, 'site.down')
    const asked = Date.now()
    const res = await events(`?after=${start}&wait=30`)
    expect(Date.now() - asked).toBeLessThan(500)
    expect(res.json.data.events).toHaveLength(1)
  })
})

describe('GET /events/next/ (wait_for_event)', () => {
  it('returns the first matching event after the cursor, waiting for it', async () => {
    const start = cursor()!
    const pending = h.call('GET', `/api/v1/events/next/?after=${start}&types=deployment.succeeded&timeout_seconds=10`, { key: one.key })
    await new Promise((r) => setTimeout(r, 50))
    record(one, 'deployment.failed')
    const made = record(one, 'deployment.succeeded', { id: 'dep-2', status: 'succeeded' })
    record(one, 'deployment.succeeded', { id: 'dep-3', status: 'succeeded' })
    const res = await pending
    expect(res.status, res.text).toBe(200)
    expect(res.json.data.event).toMatchObject({ id: made.id, type: 'deployment.succeeded', site: one.slug, data: { id: 'dep-2' } })
  })

  it('answers event null when none came in timeout_seconds', async () => {
    const res = await h.call('GET', `/api/v1/events/next/?after=${cursor()}&timeout_seconds=0`, { key: one.key })
    expect(res.status, res.text).toBe(200)
    expect(res.json.data).toEqual({ event: null })
  })
})

describe('retention', () => {
  it('the upkeep removes events older than 30 days; younger ones stay readable', async () => {
    const old = record(one, 'site.down')
    h.clock.advance(29 * 86_400_000)
    const young = record(one, 'site.up')
    h.clock.advance(1 * 86_400_000 + 1000)
    runMaintenance(h.services)
    expect(log().find(one.accountId, old.id)).toBeUndefined()
    expect(log().find(one.accountId, young.id)).toBeDefined()
    // A cursor that was pruned is unknown: start again without it.
    expect((await events(`?after=${old.id}`)).json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'after' })
    expect((await events(`?after=${young.id}`)).status).toBe(200)
  })
})

// Last: a released feed holds no request again.
describe('stopping', () => {
  it('release answers the held long polls at once with what the log holds, and holds none after', async () => {
    const start = cursor()!
    const asked = Date.now()
    const pending = events(`?after=${start}&wait=30`)
    await new Promise((r) => setTimeout(r, 100))
    h.services.eventFeed.release()
    const res = await pending
    expect(Date.now() - asked).toBeLessThan(1000)
    expect(res.json.data).toEqual({ events: [], has_more: false, next_after: start })
    expect(log().listening).toBe(STANDING)
    const later = Date.now()
    expect((await events(`?after=${start}&wait=30`)).json.data.events).toEqual([])
    expect(Date.now() - later).toBeLessThan(1000)
  })
})
