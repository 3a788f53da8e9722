import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startFakeOpenSrs, type FakeOpenSrs } from './fakes/opensrs'
import { api, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * The compiled binary with `registrar.driver = "opensrs"`, pointed at the FAKE OpenSRS in
 * test/fakes (OpenSRS cannot run here): the domain routes on the real driver, its errors reaching
 * the agent as 409, 402 and 422 with nothing registered, and a registration going through.
 */
let fake: FakeOpenSrs
let berth: Berth
let key = ''
const CONTACT = { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', phone: '+1.5555551234', address1: '100 King St W', city: 'Toronto', state: 'ON', postal_code: 'M5X 1A9', country: 'CA' }

beforeAll(async () => {
  fake = await startFakeOpenSrs({ user: 'berth-reseller', key: 'k3y' })
  berth = await startBerth({ env: { BERTH_REGISTRAR_DRIVER: 'opensrs', BERTH_REGISTRAR_OPENSRS_URL: fake.url, BERTH_REGISTRAR_OPENSRS_USER: 'berth-reseller', BERTH_REGISTRAR_OPENSRS_KEY: 'k3y', BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour' } })
  instanceOf(berth)
  const slug = uniqueSlug('srs')
  key = (await buyDirect(berth.url, { slug })).data.api_key
  expect(await waitForSite(berth.url, key, slug)).toBe('active')
}, 120_000)
afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
  await fake?.stop()
})

const register = (domain: string) => api(berth.url, 'POST', '/domains/register/', { key, body: { domain, period: 1, contact: CONTACT } })

describe('domains through OpenSRS (fake)', () => {
  it('searches with the registrar prices and no sandbox mark', async () => {
    const res = await api(berth.url, 'GET', '/domains/search/?domain=agent-opensrs.com', { key })
    expect(res.status, res.text).toBe(200)
    expect(res.json.data).toMatchObject({ available: true, premium: false, sandbox: false, price: { registration: 15.99, currency: 'CAD' } })
    const status = (await api(berth.url, 'GET', '/status/')).json.data
    expect(status.registrar).toEqual({ name: 'opensrs', sandbox: false })
  })

  it('maps the registrar errors: taken 409, funds 402, a bad field 422 on its param; nothing registered', async () => {
    fake.failNext(485, 'Domain taken')
    const taken = await register('raced-away.com')
    expect(taken.status, taken.text).toBe(409)
    expect(taken.json.error.param).toBe('domain')
    const funds = await register('funds-dry.com')
    expect(funds.status, funds.text).toBe(402)
    const phone = await register('badphone-one.com')
    expect(phone.status, phone.text).toBe(422)
    expect(phone.json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'contact.phone' })
    expect((await api(berth.url, 'GET', '/domains/', { key })).json.data).toEqual([])
  })

  it('registers through SW_REGISTER with Berth as nameserver, then changes settings at the registrar', async () => {
    const reg = await register('agent-opensrs.com')
    expect(reg.status, reg.text).toBe(201)
    expect(reg.json.data).toMatchObject({ domain: 'agent-opensrs.com', registrar: 'opensrs', sandbox: false, charged: 15.99 })
    expect(fake.domains.get('agent-opensrs.com')!.nameservers).toEqual(['ns1.localhost', 'ns2.localhost'])
    const settings = await api(berth.url, 'POST', '/domains/agent-opensrs.com/settings/', { key, body: { locked: false, privacy: false } })
    expect(settings.status, settings.text).toBe(200)
    expect(fake.domains.get('agent-opensrs.com')).toMatchObject({ locked: false, privacy: false })
  })
})
