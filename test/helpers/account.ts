import { expect } from 'vitest'
import type { InProcess } from './in-process'

/**
 * The helpers of the account routes' in-process tests (src/api/account/*.test.ts): buying a
 * site, reading the account and its subscriptions back, and driving the billing portal the way
 * a browser does.
 */

export const DAY = 86_400_000
export const MONTH = 30 * DAY
export const V1 = '/api/v1'
/** A name no other test picks. */
export const unique = (stem: string) => `${stem}-${Math.random().toString(36).slice(2, 8)}`
let ipCounter = 0
/** A fresh client address per call, so the per-address limits of checkouts and claims never trip. */
export const ip = () => `198.19.${Math.floor(++ipCounter / 250)}.${ipCounter % 250}`

export interface Bought { slug: string; key: string; accountId: string; subscriptionId: string }

/** Buys a site with a direct test payment (anonymously, or into `key`'s account) and waits until it is active. */
export async function buy(h: InProcess, sku = 'svc_starter_monthly', key?: string): Promise<Bought> {
  const slug = unique('acct')
  const created = await h.call('POST', `${V1}/acp/checkouts/`, { body: { sku }, key, headers: { 'x-forwarded-for': ip() } })
  expect(created.status, created.text).toBe(201)
  const { id, checkout_secret: secret } = created.json.data
  await h.call('POST', `${V1}/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: slug } })
  const done = await h.call('POST', `${V1}/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
  expect(done.status, done.text).toBe(201)
  await h.services.jobs.drain()
  const owner = key ?? done.json.data.api_key
  const who = await h.call('GET', `${V1}/auth/whoami/`, { key: owner })
  return { slug, key: owner, accountId: who.json.data.user.id, subscriptionId: done.json.data.subscription_id }
}

export const whoami = async (h: InProcess, key: string) => (await h.call('GET', `${V1}/auth/whoami/`, { key })).json.data
export const subscriptions = async (h: InProcess, key: string) => {
  const res = await h.call('GET', `${V1}/account/subscriptions/`, { key })
  expect(res.status, res.text).toBe(200)
  return res.json.data as any[]
}
export const subscription = async (h: InProcess, b: Bought) => (await subscriptions(h, b.key)).find((s) => s.id === b.subscriptionId)
export const siteStatus = (h: InProcess, slug: string) => (h.services.store.sqlite.query('SELECT status FROM sites WHERE slug = ? ORDER BY created_at DESC LIMIT 1').get(slug) as { status: string }).status
export const paymentsOf = (h: InProcess, accountId: string, kind?: string) => h.services.billing.paymentsOf(accountId).filter((p) => kind === undefined || p.kind === kind)
export const createKey = async (h: InProcess, key: string, scopes: string[]) => {
  const res = await h.call('POST', `${V1}/keys/create/`, { key, body: { name: scopes.join('+'), scopes } })
  expect(res.status, res.text).toBe(201)
  return res.json.data.api_key as string
}
export const iso = (ms: number) => new Date(ms).toISOString()

/** Sends a form of the billing portal the way a browser does: url-encoded, with the page's CSRF cookie. */
export async function postForm(h: InProcess, path: string, fields: Record<string, string>, cookie?: string) {
  const res = await h.app.handle(new Request(`http://localhost${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(fields).toString(),
  }))
  return { status: res.status, headers: res.headers, text: await res.text() }
}

/** Opens the portal for `key`'s account: the page, its path, the CSRF cookie and the form's token. */
export async function openPortal(h: InProcess, key: string, flow = '') {
  const link = await h.call('GET', `${V1}/account/billing-portal/${flow ? `?flow=${flow}` : ''}`, { key })
  expect(link.status, link.text).toBe(200)
  const url = new URL(link.json.data.url)
  const page = await h.call('GET', url.pathname + url.search)
  const cookie = page.headers.get('set-cookie')?.split(';')[0] ?? ''
  const csrf = /name="csrf" value="([0-9a-f]+)"/.exec(page.text)?.[1] ?? ''
  return { link: link.json.data, base: url.pathname, page, cookie, csrf }
}
