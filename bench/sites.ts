/**
 * Sites for the benchmarks that run `dist/berth` from bench/processes.ts: buying one with a direct
 * test payment, the Berth instance of a data folder, and removing everything it made in the engine.
 */
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { removeSitesOf } from '../test/helpers/sites'
import { waitFor } from './processes'

/** Buys a site (`{prefix}-xxxxx`) with a direct test payment and waits until it is active. */
export async function buySite(url: string, prefix: string, sku = 'svc_starter_monthly', timeoutMs = 120_000): Promise<{ slug: string; key: string }> {
  const slug = `${prefix}-${Math.random().toString(36).slice(2, 7)}`
  const post = (path: string, body: unknown, secret?: string) =>
    fetch(`${url}/api/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(secret ? { 'x-checkout-secret': secret } : {}) }, body: JSON.stringify(body) })
  const created = (await (await post('/acp/checkouts/', { sku })).json()).data
  await post(`/acp/checkouts/${created.id}/update/`, { requested_slug: slug, buyer_email: 'bench@example.com' }, created.checkout_secret)
  const done = await (await post(`/acp/checkouts/${created.id}/complete/`, { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' }, created.checkout_secret)).json()
  const key = done.data.api_key as string
  await waitFor(async () => (await (await fetch(`${url}/api/v1/sites/${slug}/`, { headers: { authorization: `Bearer ${key}` } })).json()).data.status === 'active', timeoutMs, 50)
  return { slug, key }
}

/** The instance id Berth keeps in the data folder's store (labels of everything it runs). */
export function instanceOf(dataDir: string): string | undefined {
  const db = new Database(join(dataDir, 'berth.db'), { readonly: true })
  try {
    return (db.query("SELECT value FROM settings WHERE key = 'instance_id'").get() as { value: string } | null)?.value
  } finally {
    db.close()
  }
}

/** Removes the containers, networks and volumes of the Berth of `dataDir` (after it stopped). */
export async function removeSites(dataDir: string): Promise<void> {
  const instance = instanceOf(dataDir)
  if (instance) await removeSitesOf(instance)
}
