import { mkdtempSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../lib/clock'
import { SandboxRegistrar } from './sandbox'
import { RegistrarError, type RegisterInput } from './types'

const CONTACT = { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', phone: '+1.5555551234', address1: '1 Main St', city: 'Toronto', state: 'ON', postal_code: 'M5X 1A9', country: 'CA' }
const input = (domain: string, periodYears = 1): RegisterInput => ({ domain, periodYears, contact: CONTACT, nameservers: ['ns1.localhost', 'ns2.localhost'], autoRenew: true, privacy: true, locked: true })
const fresh = () => {
  const file = join(mkdtempSync(join(tmpdir(), 'berth-sandbox-registrar-')), 'sandbox-registrar.json')
  const clock = new ManualClock(Date.UTC(2026, 10, 25))
  return { file, clock, registrar: new SandboxRegistrar({ file, clock }) }
}
const kindOf = (p: Promise<unknown>) => p.then(() => 'resolved', (e: unknown) => (e instanceof RegistrarError ? `${e.kind}:${e.param}` : String(e)))

describe('the sandbox registrar', () => {
  it('prices by TLD in CAD cents, premium-* ten times, and is marked sandbox', async () => {
    const { registrar } = fresh()
    expect(registrar).toMatchObject({ name: 'sandbox', sandbox: true })
    expect(await registrar.search('agent.com')).toEqual({ domain: 'agent.com', available: true, premium: false, registerCents: 1800, renewCents: 1800 })
    expect(await registrar.search('agent.net')).toMatchObject({ registerCents: 2000, renewCents: 2200 })
    expect(await registrar.search('agent.dev')).toMatchObject({ registerCents: 2500 })
    expect(await registrar.search('premium-agent.io')).toMatchObject({ premium: true, registerCents: 65000 })
  })

  it('has names that are always taken, and funds-* names that cannot be paid', async () => {
    const { registrar } = fresh()
    for (const name of ['taken.com', 'taken-shop.ca', 'google.org', 'example.net']) expect((await registrar.search(name)).available, name).toBe(false)
    expect(await kindOf(registrar.register(input('taken.com')))).toBe('taken:domain')
    expect(await kindOf(registrar.register(input('funds-shop.com')))).toBe('funds:null')
  })

  it('registers for whole calendar years, after which the name is taken, across restarts, in a 0600 file', async () => {
    const { file, clock, registrar } = fresh()
    const one = await registrar.register(input('agent.com'))
    expect(new Date(one.expiresAt).toISOString()).toBe('2027-11-25T00:00:00.000Z')
    expect(new Date((await registrar.register(input('agent.ca', 2))).expiresAt).toISOString()).toBe('2028-11-25T00:00:00.000Z')
    expect((await registrar.search('agent.com')).available).toBe(false)
    expect(await kindOf(registrar.register(input('agent.com')))).toBe('taken:domain')
    expect(statSync(file).mode & 0o777).toBe(0o600)
    const again = new SandboxRegistrar({ file, clock })
    expect((await again.search('agent.com')).available).toBe(false)
    expect(await again.transferOutCode('agent.com')).toBe(await registrar.transferOutCode('agent.com'))
  })

  it('renews from the recorded expiry, refusing a renewal that names another one', async () => {
    const { registrar } = fresh()
    const { expiresAt } = await registrar.register(input('agent.org'))
    const renewed = await registrar.renew({ domain: 'agent.org', periodYears: 1, currentExpiry: expiresAt })
    expect(new Date(renewed.expiresAt).toISOString()).toBe('2028-11-25T00:00:00.000Z')
    // The same renewal sent twice: the second names the old expiry and changes nothing.
    expect(await kindOf(registrar.renew({ domain: 'agent.org', periodYears: 1, currentExpiry: expiresAt }))).toBe('invalid:current_expiry')
    expect(await kindOf(registrar.renew({ domain: 'other.org', periodYears: 1, currentExpiry: expiresAt }))).toBe('not_found:domain_name')
  })

  it('records nameservers and settings for its domains only', async () => {
    const { registrar } = fresh()
    await registrar.register(input('agent.com'))
    await registrar.setNameservers('agent.com', ['ns1.example.net'])
    await registrar.updateSettings('agent.com', { locked: false })
    expect(await kindOf(registrar.setNameservers('nobody.com', ['ns1.example.net']))).toBe('not_found:domain_name')
    expect(await kindOf(registrar.updateSettings('nobody.com', { locked: false }))).toBe('not_found:domain_name')
    expect(await kindOf(registrar.transferOutCode('nobody.com'))).toBe('not_found:domain_name')
  })
})
