import type { InProcess } from './in-process'

export interface StoredEvent {
  id: string
  type: string
  account_id: string
  site_id: string | null
  site_slug: string | null
  data: Record<string, any>
}

/** The events of an account as the store holds them, oldest first (issue 41; the API reads the same rows). */
export function storedEvents(h: Pick<InProcess, 'services'>, accountId: string, types?: string[]): StoredEvent[] {
  const rows = h.services.store.sqlite.query('SELECT id, type, account_id, site_id, site_slug, data FROM events WHERE account_id = ? ORDER BY seq').all(accountId) as (Omit<StoredEvent, 'data'> & { data: string })[]
  return rows.map((r) => ({ ...r, data: JSON.parse(r.data) })).filter((e) => !types || types.includes(e.type))
}

/** The account of a key, as the store holds it. */
export function accountOfKey(h: Pick<InProcess, 'services'>, key: string): string {
  const hash = new Bun.CryptoHasher('sha256').update(key).digest('hex')
  return (h.services.store.sqlite.query('SELECT account_id FROM api_keys WHERE key_hash = ?').get(hash) as { account_id: string }).account_id
}
