import { api } from './binary'

/** A slug no other test run will pick. */
export const uniqueSlug = (stem: string) => `${stem}-${Math.random().toString(36).slice(2, 8)}`

/** Creates a checkout for `sku` and sets the slug (and email); returns id and secret. */
export async function readyCheckout(url: string, opts: { sku?: string; slug: string; email?: string; key?: string; ip?: string }) {
  const headers = opts.ip ? { 'x-forwarded-for': opts.ip } : undefined
  const created = await api(url, 'POST', '/acp/checkouts/', { body: { sku: opts.sku ?? 'svc_starter_monthly' }, key: opts.key, headers })
  if (created.status !== 201) throw new Error(`create checkout: ${created.status} ${created.text}`)
  const { id, checkout_secret: secret } = created.json.data
  const updated = await api(url, 'POST', `/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: opts.slug, buyer_email: opts.email ?? 'buyer@example.com' } })
  if (updated.status !== 200) throw new Error(`update checkout: ${updated.status} ${updated.text}`)
  return { id: id as string, secret: secret as string }
}

/** Buys a site with a direct test payment; returns the session data (api_key when anonymous). */
export async function buyDirect(url: string, opts: { sku?: string; slug: string; key?: string }) {
  const { id, secret } = await readyCheckout(url, opts)
  const done = await api(url, 'POST', `/acp/checkouts/${id}/complete/`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' }, headers: { 'x-checkout-secret': secret } })
  if (done.status !== 201) throw new Error(`complete checkout: ${done.status} ${done.text}`)
  return { id, secret, data: done.json.data }
}

/** Polls GET /sites/{slug}/ until the site leaves `provisioning`; returns its final status. */
export async function waitForSite(url: string, key: string, slug: string, timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const res = await api(url, 'GET', `/sites/${slug}/`, { key })
    if (res.status !== 200) throw new Error(`get site: ${res.status} ${res.text}`)
    if (res.json.data.status !== 'provisioning') return res.json.data.status
    if (Date.now() > deadline) throw new Error(`site ${slug} still provisioning after ${timeoutMs} ms`)
    await Bun.sleep(50)
  }
}

/** GET through Berth's edge with the site's Host header. */
export async function viaEdge(berthUrl: string, slug: string, path = '/') {
  const port = new URL(berthUrl).port
  const res = await fetch(`${berthUrl}${path}`, { headers: { host: `${slug}.localhost:${port}` } })
  return { status: res.status, text: await res.text(), headers: res.headers }
}
