import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buyInProcess } from '../../../test/helpers/home-runtime'
import { FakeDatabaseRuntime } from '../../../test/helpers/database-double'
import { inProcess } from '../../../test/helpers/in-process'
import { accountOfKey, storedEvents } from '../../../test/helpers/events-read'
import { until } from '../../../test/helpers/until'

/**
 * The databases' events (issue 41) in-process, over the fake of the database servers
 * (test/helpers/database-double.ts): database.created once its server answers, database.deleted,
 * database.down when its container goes behind Berth's back and database.up once it is back;
 * none of them holds its URL or password.
 */
const fake = new FakeDatabaseRuntime()
const h = inProcess({ databaseRuntime: fake })
type Site = { slug: string; key: string; siteId: string }
let site: Site
beforeAll(async () => {
  site = await buyInProcess(h, 'svc_business_monthly', 'dbe')
})
afterAll(() => h.close())

const dbEvents = () => storedEvents(h, accountOfKey(h, site.key)).filter((e) => e.type.startsWith('database.'))
const call = (method: string, rest = '', body?: unknown) => h.call(method, `/api/v1/sites/${site.slug}/databases/${rest}`, { key: site.key, body })

describe('database events', () => {
  it('database.created with the database view, never its URL or password; a refused create records nothing', async () => {
    const made = await call('POST', '', { engine: 'postgres', name: 'main' })
    expect(made.status, made.text).toBe(201)
    const again = await call('POST', '', { engine: 'postgres', name: 'main' })
    expect(again.status).toBe(409)
    const events = dbEvents()
    expect(events.map((e) => e.type)).toEqual(['database.created'])
    expect(events[0]).toMatchObject({ site_id: site.siteId, site_slug: site.slug })
    expect(events[0]!.data).toMatchObject({ name: 'main', engine: 'postgres', state: 'available', host: 'db-main', port: 5432, user: 'site', database: 'main', error: null })
    const password = fake.dbs.get(`${site.slug}/main`)!.password
    expect(JSON.stringify(events)).not.toContain(password)
    expect(JSON.stringify(events)).not.toContain(made.json.data.url)
  })

  it('database.down when its container dies behind Berth\'s back, database.up once it answers again', async () => {
    fake.dbs.get(`${site.slug}/main`)!.running = false
    h.services.databaseLife.onEvent({ action: 'die', siteId: site.siteId, slug: site.slug, containerId: `c-${site.slug}-main`, database: 'main' })
    await until(() => dbEvents().some((e) => e.type === 'database.up'))
    const events = dbEvents()
    expect(events.map((e) => e.type)).toEqual(['database.created', 'database.down', 'database.up'])
    expect(events[1]!.data).toMatchObject({ name: 'main', state: 'recovering' })
    expect(events[2]!.data).toMatchObject({ name: 'main', state: 'available' })
  })

  it('database.deleted when deleted; deleting it again records nothing more', async () => {
    expect((await call('DELETE', 'main/')).status).toBe(200)
    await call('DELETE', 'main/')
    const events = dbEvents()
    expect(events.map((e) => e.type)).toEqual(['database.created', 'database.down', 'database.up', 'database.deleted'])
    expect(events[3]!.data).toMatchObject({ name: 'main', state: 'deleted' })
    expect(JSON.stringify(events)).not.toContain(fake.dbs.get(`${site.slug}/main`)?.password ?? 'no-password-left')
  })
})
