import { afterAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'
import { storedEvents } from '../../../test/helpers/events-read'

// key.created and key.revoked (issue 41) through the API in-process: recorded with the change,
// holding the key's prefix, id and scopes, never the key itself.
const h = inProcess()
afterAll(() => h.close())

describe('key events', () => {
  it('key.created for the first key and each new one, key.revoked when revoked; no event holds a key', async () => {
    const me = await h.register()
    const created = await h.call('POST', '/api/v1/keys/create/', { key: me.key, body: { name: 'ci', scopes: ['read'] } })
    expect(created.status, created.text).toBe(201)
    const revoked = await h.call('POST', `/api/v1/keys/${created.json.data.key_id}/revoke/`, { key: me.key })
    expect(revoked.status, revoked.text).toBe(200)
    // Revoking again succeeds and changes nothing: no second event.
    await h.call('POST', `/api/v1/keys/${created.json.data.key_id}/revoke/`, { key: me.key })
    const events = storedEvents(h, me.accountId)
    expect(events.map((e) => e.type)).toEqual(['key.created', 'key.created', 'key.revoked'])
    expect(events[0]!.data).toMatchObject({ key_id: me.keyId, status: 'active' })
    expect(events[1]!.data).toMatchObject({ key_id: created.json.data.key_id, prefix: created.json.data.prefix, name: 'ci', scopes: ['read'], status: 'active' })
    expect(events[2]!.data).toMatchObject({ key_id: created.json.data.key_id, status: 'revoked' })
    const all = JSON.stringify(events)
    expect(all).not.toContain(me.key)
    expect(all).not.toContain(created.json.data.api_key)
    expect(all).not.toContain(created.json.data.api_key.slice(0, 20))
  })

  it('a rotation: key.created for the new key and key.revoked (rotated) for the old one', async () => {
    const me = await h.register()
    const rotated = await h.call('POST', `/api/v1/keys/${me.keyId}/rotate/`, { key: me.key })
    expect(rotated.status, rotated.text).toBe(200)
    const events = storedEvents(h, me.accountId).slice(1)
    expect(events.map((e) => e.type)).toEqual(['key.created', 'key.revoked'])
    expect(events[1]!.data).toMatchObject({ key_id: me.keyId, status: 'rotated' })
    expect(JSON.stringify(events)).not.toContain(rotated.json.data.api_key)
  })

  it('a refused revocation (another account\'s key: 404; a scope the caller lacks: 403) records nothing', async () => {
    const me = await h.register()
    const other = await h.register()
    const foreign = await h.call('POST', `/api/v1/keys/${other.keyId}/revoke/`, { key: me.key })
    expect(foreign.status).toBe(404)
    const reader = await h.call('POST', '/api/v1/keys/create/', { key: me.key, body: { scopes: ['read'] } })
    const wider = await h.call('POST', '/api/v1/keys/create/', { key: reader.json.data.api_key, body: { scopes: ['admin'] } })
    expect(wider.status).toBe(403)
    expect(storedEvents(h, other.accountId).map((e) => e.type)).toEqual(['key.created'])
    expect(storedEvents(h, me.accountId).map((e) => e.type)).toEqual(['key.created', 'key.created'])
  })
})
