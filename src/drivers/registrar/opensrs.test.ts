import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startFakeOpenSrs, type FakeOpenSrs } from '../../../test/fakes/opensrs'
import { OpenSrsRegistrar } from './opensrs'
import { decodeEnvelope, encodeEnvelope } from './opensrs-xml'
import { RegistrarError, type RegisterInput } from './types'

/** The OpenSRS driver over real HTTP against the FAKE OpenSRS in test/fakes (OpenSRS cannot run here). */
const CONTACT = { first_name: 'Ada', last_name: 'Lovelace & Co', email: 'ada@example.com', phone: '+1.5555551234', address1: '100 King St W', city: 'Toronto', state: 'ON', postal_code: 'M5X 1A9', country: 'CA' }
const input = (domain: string, extra: Partial<RegisterInput> = {}): RegisterInput => ({
  domain, periodYears: 1, contact: CONTACT, nameservers: ['ns1.sites.example.com', 'ns2.sites.example.com'], autoRenew: true, privacy: true, locked: true, ...extra,
})
const YEAR_MS = 365 * 86_400_000

let fake: FakeOpenSrs
let registrar: OpenSrsRegistrar
beforeAll(async () => {
  fake = await startFakeOpenSrs({ user: 'reseller', key: 'secret-key' })
  registrar = new OpenSrsRegistrar({ url: fake.url, user: 'reseller', key: 'secret-key' })
})
afterAll(() => fake.stop())

async function failure(p: Promise<unknown>): Promise<RegistrarError> {
  const err = await p.then(() => null, (e: unknown) => e)
  expect(err).toBeInstanceOf(RegistrarError)
  return err as RegistrarError
}

describe('the OpenSRS XML format', () => {
  it('round-trips nested assocs, arrays and text that needs escaping', () => {
    const body = { action: 'SW_REGISTER', attributes: { name: `A & B <"quoted"> 'x'`, list: ['a', { k: 'v' }], empty: '' } }
    const xml = encodeEnvelope(body)
    expect(xml).toContain('<!DOCTYPE OPS_envelope')
    expect(decodeEnvelope(xml)).toEqual(body)
  })

  it('refuses what is not an OPS envelope', () => {
    expect(() => decodeEnvelope('<html>502 Bad Gateway</html>')).toThrow(/data_block/)
    expect(() => decodeEnvelope('<OPS_envelope><body><data_block><dt_assoc><item key="a">x</dt_assoc></data_block></body></OPS_envelope>')).toThrow()
  })
})

describe('the OpenSRS driver against a fake OpenSRS', () => {
  it('searches: available or taken, with CAD cents for registration and renewal and the premium flag', async () => {
    expect(await registrar.search('agentsite.com')).toEqual({ domain: 'agentsite.com', available: true, premium: false, registerCents: 1599, renewCents: 1759 })
    expect((await registrar.search('taken-name.com')).available).toBe(false)
    const premium = await registrar.search('premium-shop.net')
    expect(premium).toMatchObject({ premium: true, registerCents: 18250 })
    const lookup = fake.requests.find((r) => r.action === 'LOOKUP')!
    expect(lookup).toMatchObject({ object: 'DOMAIN', domain: 'agentsite.com' })
  })

  it('registers with the contact, nameservers, period and settings, and for .ca the legal type', async () => {
    const before = Date.now()
    const done = await registrar.register(input('agentsite.com', { periodYears: 2 }))
    expect(done.registrarRef).toMatch(/^\d+$/)
    expect(done.expiresAt - before).toBeGreaterThanOrEqual(2 * YEAR_MS)
    const sent = fake.requests.filter((r) => r.action === 'SW_REGISTER').pop()!.attributes
    expect(sent).toMatchObject({ domain: 'agentsite.com', period: '2', reg_type: 'new', handle: 'process', auto_renew: '1', f_lock_domain: '1', f_whois_privacy: '1', custom_nameservers: '1' })
    expect(sent.nameserver_list).toEqual([{ name: 'ns1.sites.example.com', sortorder: '1' }, { name: 'ns2.sites.example.com', sortorder: '2' }])
    expect((sent.contact_set as Record<string, Record<string, string>>).owner).toMatchObject({ first_name: 'Ada', last_name: 'Lovelace & Co', phone: '+1.5555551234', country: 'CA' })
    expect(fake.domains.get('agentsite.com')!.nameservers).toEqual(['ns1.sites.example.com', 'ns2.sites.example.com'])

    await registrar.register(input('maple.ca', { caLegalType: 'CCO' }))
    expect(fake.requests.filter((r) => r.action === 'SW_REGISTER').pop()!.attributes).toMatchObject({ legal_type: 'CCO' })
    // Registered: taken from now on.
    expect((await registrar.search('agentsite.com')).available).toBe(false)
  })

  it('renews with the current expiry year and reads the new expiry', async () => {
    const current = fake.domains.get('maple.ca')!.expiresAt
    const { expiresAt } = await registrar.renew({ domain: 'maple.ca', periodYears: 1, currentExpiry: current })
    expect(Math.round((expiresAt - current) / 86_400_000)).toBeGreaterThanOrEqual(365)
    // OpenSRS states the expiry to the second.
    expect(Math.abs(fake.domains.get('maple.ca')!.expiresAt - expiresAt)).toBeLessThan(1000)
    // A renewal naming the wrong year is refused, as registries do (no double renewal).
    const wrong = await failure(registrar.renew({ domain: 'maple.ca', periodYears: 1, currentExpiry: current }))
    expect(wrong.kind).toBe('invalid')
  })

  it('sets nameservers, lock, privacy and auto-renew, and reads the transfer code', async () => {
    await registrar.setNameservers('maple.ca', ['ns1.other.example', 'ns2.other.example'])
    expect(fake.domains.get('maple.ca')!.nameservers).toEqual(['ns1.other.example', 'ns2.other.example'])
    await registrar.updateSettings('maple.ca', { locked: false, privacy: false, autoRenew: false })
    expect(fake.domains.get('maple.ca')).toMatchObject({ locked: false, privacy: false, autoRenew: false })
    expect(await registrar.transferOutCode('maple.ca')).toBe('auth-maple')
  })

  it('maps OpenSRS errors by code: taken, funds, a field error with its param, not found', async () => {
    expect(await failure(registrar.register(input('taken-again.com')))).toMatchObject({ kind: 'taken', param: 'domain' })
    expect((await failure(registrar.register(input('funds-low.com')))).kind).toBe('funds')
    const phone = await failure(registrar.register(input('badphone-x.com')))
    expect(phone).toMatchObject({ kind: 'invalid', param: 'contact.phone' })
    expect(phone.message).toMatch(/phone/)
    expect((await failure(registrar.setNameservers('unknown.com', ['ns1.x.example'])))).toMatchObject({ kind: 'not_found' })
    fake.failNext(486, 'Domain is being processed')
    expect((await failure(registrar.search('anything.com'))).kind).toBe('unreachable')
  })

  it('is unreachable with a wrong key, a server that is down, or an answer that is not XML', async () => {
    const wrongKey = new OpenSrsRegistrar({ url: fake.url, user: 'reseller', key: 'wrong' })
    const auth = await failure(wrongKey.search('agentsite.com'))
    expect(auth.kind).toBe('unreachable')
    expect(auth.message).toMatch(/Authentication/)
    const down = new OpenSrsRegistrar({ url: 'http://127.0.0.1:9/', user: 'reseller', key: 'secret-key', timeoutMs: 2000 })
    expect((await failure(down.search('agentsite.com'))).kind).toBe('unreachable')
    const html = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('<html>maintenance</html>') })
    try {
      const notXml = new OpenSrsRegistrar({ url: `http://127.0.0.1:${html.port}/`, user: 'reseller', key: 'secret-key' })
      expect((await failure(notXml.search('agentsite.com'))).message).toMatch(/not an OPS envelope/)
    } finally {
      await html.stop(true)
    }
  })
})
