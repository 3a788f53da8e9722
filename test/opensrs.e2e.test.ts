import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startFakeOpenSrs, type FakeOpenSrs } from './fakes/opensrs'
import { api, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * The compiled binary with `registrar.driver = "opensrs"`, pointed at the FAKE OpenSRS in
 * test/fakes (OpenSRS cannot run here): the domain routes on the real driver, its errors reaching
 * the agent (409 at the lookup; a failed registration with the reason, refunded, when the
 * registration job is refused), and a registration going through.
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

/** Polls the domain until its registration job has finished. */
async function settled(domain: string) {
  const deadline = Date.now() + 20_000
  for (;;) {
    const res = await api(berth.url, 'GET', `/domains/${domain}/`, { key })
    if (res.json.data.status !== 'pending') return res.json.data
    if (Date.now() > deadline) throw new Error(`${domain} still pending`)
    await Bun.sleep(50)
  }
}

describe('domains through OpenSRS (fake)', () => {
  it('searches with the registrar prices and no sandbox mark', async () => {
    const res = await api(berth.url, 'GET', '/domains/search/?domain=agent-opensrs.com', { key })
    expect(res.status, res.text).toBe(200)
    expect(res.json.data).toMatchObject({ available: true, premium: false, sandbox: false, price: { registration: 15.99, currency: 'CAD' } })
    const status = (await api(berth.url, 'GET', '/status/')).json.data
    expect(status.registrar).toEqual({ name: 'opensrs', sandbox: false })
  })

  it('maps the registrar errors: taken at the lookup is 409; refused in the registration job (funds, a bad field) the domain fails with the reason, refunded; nothing registered', async () => {
    fake.failNext(485, 'Domain taken')
    const taken = await register('raced-away.com')
    expect(taken.status, taken.text).toBe(409)
    expect(taken.json.error.param).toBe('domain')
    for (const name of ['funds-dry.com', 'badphone-one.com']) {
      const res = await register(name)
      expect(res.status, res.text).toBe(201)
      expect(res.json.data.status).toBe('pending')
    }
    const funds = await settled('funds-dry.com')
    expect(funds).toMatchObject({ status: 'failed', expires_at: null })
    expect(funds.error).toMatch(/registrar could not take payment.*\(440\).*refunded/)
    const phone = await settled('badphone-one.com')
    expect(phone.status).toBe('failed')
    expect(phone.error).toMatch(/The registry refused the registration: .*phone/)
    expect(fake.domains.has('funds-dry.com') || fake.domains.has('badphone-one.com')).toBe(false)
    const payments = (await api(berth.url, 'GET', '/account/payments/', { key })).json.data.filter((p: { kind: string }) => p.kind === 'domain')
    expect(payments.map((p: { status: string }) => p.status)).toEqual(['refunded', 'refunded'])
  })

  it('registers through SW_REGISTER with Berth as nameserver, then changes settings at the registrar', async () => {
    const reg = await register('agent-opensrs.com')
    expect(reg.status, reg.text).toBe(201)
    expect(reg.json.data).toMatchObject({ domain: 'agent-opensrs.com', status: 'pending', registrar: 'opensrs', sandbox: false, charged: 15.99 })
    const active = await settled('agent-opensrs.com')
    expect(active.status).toBe('active')
    // The driver counts the year from when it sent SW_REGISTER; the registry from when it got it.
    expect(Math.abs(Date.parse(active.expires_at) - fake.domains.get('agent-opensrs.com')!.expiresAt)).toBeLessThan(5_000)
    expect(fake.domains.get('agent-opensrs.com')!.nameservers).toEqual(['ns1.localhost', 'ns2.localhost'])
    const settings = await api(berth.url, 'POST', '/domains/agent-opensrs.com/settings/', { key, body: { locked: false, privacy: false } })
    expect(settings.status, settings.text).toBe(200)
    expect(fake.domains.get('agent-opensrs.com')).toMatchObject({ locked: false, privacy: false })
  })
})
