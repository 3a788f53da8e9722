import { afterAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'
import { RecordingRuntime } from '../../../test/helpers/recording-runtime'
import { DomainError } from '../errors'

/**
 * The hoster's commands on sites and accounts (berth sites ..., berth accounts ...), in-process
 * on a real SQLite store with a recording container runtime, seen through the owner's API and the
 * edge's directory (test/admin-cli.e2e.test.ts runs them as the compiled binary against Docker).
 */
const runtime = new RecordingRuntime()
const h = inProcess({ runtime })
const admin = h.admin
afterAll(async () => {
  await h.close()
  runtime.close()
})

let ipCounter = 0
const ip = () => `198.18.${Math.floor(++ipCounter / 250)}.${ipCounter % 250}`
const uniq = (stem: string) => `${stem}-${Math.random().toString(36).slice(2, 8)}`

/** Buys a site with a direct test payment (with `key`, into that account) and waits until it is active. */
async function buy(key?: string): Promise<{ slug: string; key: string }> {
  const slug = uniq('adm')
  const created = await h.call('POST', '/api/v1/acp/checkouts/', { body: { sku: 'svc_starter_monthly' }, key, headers: { 'x-forwarded-for': ip() } })
  const { id, checkout_secret: secret } = created.json.data
  await h.call('POST', `/api/v1/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: slug, buyer_email: 'adm@example.com' } })
  const done = await h.call('POST', `/api/v1/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
  expect(done.status, done.text).toBe(201)
  await h.services.jobs.drain()
  return { slug, key: key ?? done.json.data.api_key }
}

const getSite = async (slug: string, key: string) => (await h.call('GET', `/api/v1/sites/${slug}/`, { key })).json.data
const edgeState = async (slug: string) => (await h.services.directory.resolve(slug))?.state
const accountOf = (slug: string) => admin.sites.show(slug).account.id
const subscriptionOf = (slug: string) => admin.sites.show(slug).subscription_id!

/** The error `fn` throws, to assert its kind and words. */
async function refusal(fn: () => unknown): Promise<DomainError> {
  try {
    await fn()
  } catch (err) {
    if (err instanceof DomainError) return err
    throw err
  }
  throw new Error('expected a refusal')
}

describe('berth sites suspend / resume', () => {
  it('suspends with the reason: the owner sees it, the edge answers suspended, the container stops, changes answer 409', async () => {
    const { slug, key } = await buy()
    const stopsBefore = runtime.callsOf('stopSite', slug).length
    const shown = await admin.sites.suspend(slug, '  phishing page reported  ')
    expect(shown).toMatchObject({ slug, status: 'suspended', suspension: { by: 'admin', reason: 'phishing page reported' } })
    expect(runtime.callsOf('stopSite', slug)).toHaveLength(stopsBefore + 1)
    expect(await edgeState(slug)).toBe('suspended')
    expect(await getSite(slug, key)).toMatchObject({ status: 'suspended', suspension: { by: 'admin', reason: 'phishing page reported' } })
    const change = await h.call('POST', `/api/v1/sites/${slug}/deploy/`, { key, body: {} })
    expect(change.status).toBe(409)
    expect(change.json.error.message).toContain('suspended by the hoster (phishing page reported)')
  })

  it('resume makes it active, starts the container and clears the suspension', async () => {
    const { slug, key } = await buy()
    await admin.sites.suspend(slug, 'spam')
    const runsBefore = runtime.callsOf('ensureSite', slug).length
    const back = await admin.sites.resume(slug)
    expect(back).toMatchObject({ status: 'active', suspension: null })
    expect(runtime.callsOf('ensureSite', slug)).toHaveLength(runsBefore + 1)
    expect(await edgeState(slug)).toBe('serving')
    expect(await getSite(slug, key)).toMatchObject({ status: 'active', suspension: null })
  })

  it('refuses an unknown slug (not_found), a blank or too long reason (invalid), and resuming what is not the admin\'s', async () => {
    expect((await refusal(() => admin.sites.suspend('no-such-site', 'x'))).kind).toBe('not_found')
    const { slug } = await buy()
    expect(await refusal(() => admin.sites.suspend(slug, '   '))).toMatchObject({ kind: 'invalid', field: 'reason' })
    expect(await refusal(() => admin.sites.suspend(slug, 'x'.repeat(501)))).toMatchObject({ kind: 'invalid', field: 'reason' })
    expect((await refusal(() => admin.sites.resume(slug))).message).toContain('not suspended')
    // Billing's suspension (a lapsed subscription) is the payment's to lift, not the admin's.
    h.services.store.sqlite.run("UPDATE sites SET status = 'suspended', suspended_by = 'billing' WHERE slug = ?", [slug])
    const billing = await refusal(() => admin.sites.resume(slug))
    expect(billing.kind).toBe('conflict')
    expect(billing.message).toContain('suspended by billing')
    expect(admin.sites.show(slug).suspension).toMatchObject({ by: 'billing' })
  })

  it('a site billing had suspended becomes the admin\'s; resumed while its subscription is unpaid, it stays suspended by billing', async () => {
    const { slug } = await buy()
    h.services.store.sqlite.run("UPDATE sites SET status = 'suspended', suspended_by = 'billing' WHERE slug = ?", [slug])
    expect(await admin.sites.suspend(slug, 'abuse')).toMatchObject({ status: 'suspended', suspension: { by: 'admin', reason: 'abuse' } })
    h.services.store.sqlite.run("UPDATE subscriptions SET status = 'past_due' WHERE id = ?", [subscriptionOf(slug)])
    const runsBefore = runtime.callsOf('ensureSite', slug).length
    const after = await admin.sites.resume(slug)
    expect(after).toMatchObject({ status: 'suspended', suspension: { by: 'billing' }, subscription_status: 'past_due' })
    expect(runtime.callsOf('ensureSite', slug)).toHaveLength(runsBefore)
  })

  it('a deletion and its restore keep the admin\'s suspension', async () => {
    const { slug, key } = await buy()
    await admin.sites.suspend(slug, 'malware')
    expect((await h.call('DELETE', `/api/v1/sites/${slug}/delete/`, { key })).status).toBe(200)
    const restored = await h.call('POST', `/api/v1/sites/${slug}/restore/`, { key })
    expect(restored.status, restored.text).toBe(200)
    expect(restored.json.data).toMatchObject({ status: 'suspended', suspension: { by: 'admin', reason: 'malware' } })
  })
})

describe('berth sites list / show / delete', () => {
  it('lists every site with its account, filters by status and account', async () => {
    const { slug } = await buy()
    const other = await buy()
    await admin.sites.suspend(other.slug, 'listed')
    const all = admin.sites.list()
    expect(all.map((s) => s.slug)).toEqual(expect.arrayContaining([slug, other.slug]))
    const suspended = admin.sites.list({ status: 'suspended' })
    expect(suspended.map((s) => s.slug)).toContain(other.slug)
    expect(suspended.map((s) => s.slug)).not.toContain(slug)
    expect(admin.sites.list({ account: accountOf(slug) }).map((s) => s.slug)).toEqual([slug])
    expect(admin.sites.show(slug)).toMatchObject({ slug, status: 'active', plan: 'starter', account: { email: 'adm@example.com', status: 'active' }, subscription_status: 'active' })
  })

  it('delete schedules the grace period as the API does; --now removes the site for good', async () => {
    const { slug, key } = await buy()
    const scheduled = await admin.sites.delete(slug, { now: false })
    expect(scheduled.status).toBe('pending_deletion')
    expect(scheduled.deletion_scheduled_for).not.toBeNull()
    expect(await edgeState(slug)).toBe('pending_deletion')
    const gone = await admin.sites.delete(slug, { now: true })
    expect(gone.status).toBe('deleted')
    expect(runtime.callsOf('removeSite', slug).at(-1)).toMatchObject({ volume: true })
    expect(await h.services.directory.resolve(slug)).toBeNull()
    expect((await h.call('GET', `/api/v1/sites/${slug}/`, { key })).status).toBe(404)
    expect((await refusal(() => admin.sites.show(slug))).kind).toBe('not_found')
  })
})

describe('berth accounts suspend / resume', () => {
  it("holds the account's keys (403 saying so) and sites, keeps a site suspended on its own, and resume undoes exactly that", async () => {
    const first = await buy()
    const second = await buy(first.key)
    const id = accountOf(first.slug)
    await admin.sites.suspend(second.slug, 'its own reason')
    const held = await admin.accounts.suspend(id, 'chargeback fraud')
    expect(held).toMatchObject({ id, status: 'suspended', suspended_reason: 'chargeback fraud' })
    expect(held.sites).toEqual(expect.arrayContaining([
      { slug: first.slug, status: 'suspended', suspended_by: 'account' },
      { slug: second.slug, status: 'suspended', suspended_by: 'admin' },
    ]))
    expect(await edgeState(first.slug)).toBe('suspended')
    const refused = await h.call('GET', '/api/v1/sites/', { key: first.key })
    expect(refused.status).toBe(403)
    expect(refused.json.error).toMatchObject({ code: 'FORBIDDEN' })
    expect(refused.json.error.message).toContain('suspended by the hoster')
    expect((await refusal(() => admin.sites.resume(first.slug))).message).toContain('berth accounts resume')
    expect((await refusal(() => admin.accounts.suspend(id, 'again'))).kind).toBe('conflict')
    expect(await refusal(() => admin.accounts.suspend(id, '  '))).toMatchObject({ kind: 'invalid', field: 'reason' })

    const back = await admin.accounts.resume(id)
    expect(back).toMatchObject({ status: 'active', suspended_reason: null })
    expect((await h.call('GET', '/api/v1/sites/', { key: first.key })).status).toBe(200)
    expect(admin.sites.show(first.slug)).toMatchObject({ status: 'active', suspension: null })
    expect(admin.sites.show(second.slug)).toMatchObject({ status: 'suspended', suspension: { by: 'admin', reason: 'its own reason' } })
    expect(await edgeState(first.slug)).toBe('serving')
    expect((await refusal(() => admin.accounts.resume(id))).kind).toBe('conflict')
    expect((await refusal(() => admin.accounts.show('00000000-0000-4000-8000-000000000000'))).kind).toBe('not_found')
  })

  it('refuses to suspend an account while one of its sites is being set up (it would come up active)', async () => {
    const { slug } = await buy()
    const id = accountOf(slug)
    h.services.store.sqlite.run("UPDATE sites SET status = 'provisioning' WHERE slug = ?", [slug])
    const refused = await refusal(() => admin.accounts.suspend(id, 'fraud'))
    expect(refused.kind).toBe('conflict')
    expect(refused.message).toContain('still being set up')
    expect(admin.accounts.show(id).status).toBe('active')
  })

  it('lists accounts with their sites and active keys', async () => {
    const { slug } = await buy()
    const id = accountOf(slug)
    const row = admin.accounts.list().find((a) => a.id === id)
    expect(row).toMatchObject({ status: 'active', email: 'adm@example.com', active_keys: 1, sites: [{ slug, status: 'active', suspended_by: null }] })
    expect(row!.subscriptions).toHaveLength(1)
  })
})
