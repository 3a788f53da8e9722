import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'
import { verifiedBy, WebhookReceiver } from '../../../test/helpers/webhook-receiver'

/**
 * Webhook URLs and the outbound rules (issue 41, item 3): refused at creation (422
 * BLOCKED_ADDRESS, param url) and at every delivery; the address checked is the one connected to.
 * DNS is a stub resolver (the outbound check takes one); the receivers are real servers on
 * loopback. `closed` has no allow list; `open` lets 127.0.0.0/8 in, as a hoster would for an
 * internal receiver.
 */
const PUBLIC = '93.184.215.14'
const answers = new Map<string, string[]>()
const asked: string[] = []
const resolver = async (host: string) => {
  asked.push(host)
  const list = answers.get(host)
  if (!list) throw new Error('ENOTFOUND')
  return list
}
const closed = inProcess({ resolver })
const open = inProcess({ resolver, env: { BERTH_OUTBOUND_ALLOW_NETWORKS: '127.0.0.0/8' } })
let closedKey = ''
let openKey = ''
let openAccount = ''

beforeAll(async () => {
  for (const h of [closed, open]) h.clock.set(Date.now())
  closedKey = (await closed.register()).key
  const a = await open.register()
  openKey = a.key
  openAccount = a.accountId
  closed.services.webhookSender.start()
  open.services.webhookSender.start()
})
afterAll(() => {
  for (const h of [closed, open]) {
    h.services.webhookSender.stop()
    h.close()
  }
})

const create = (h: typeof closed, key: string, body: unknown) => h.call('POST', '/api/v1/webhooks/', { key, body })

async function drain(h: typeof closed) {
  h.services.webhookSender.kick()
  await Bun.sleep(5)
  await h.services.webhookSender.idle()
}

describe('webhook URLs and the outbound rules', () => {
  it.each([
    ['https://127.0.0.1/hook', 'loopback'],
    ['https://[::1]/hook', 'loopback'],
    ['https://10.0.0.1/hook', 'private'],
    ['https://169.254.169.254/latest/meta-data/', 'link-local'],
    ['https://0x7f000001/hook', 'loopback'],
  ])('%s is refused at creation: 422 BLOCKED_ADDRESS, param url', async (url, words) => {
    const res = await create(closed, closedKey, { url })
    expect(res.status, res.text).toBe(422)
    expect(res.json.error).toMatchObject({ code: 'BLOCKED_ADDRESS', param: 'url' })
    expect(res.json.error.message).toContain(words)
    expect(res.json.error.message).toContain('outbound.allow_networks')
  })

  it('a name that resolves to loopback is refused at creation', async () => {
    answers.set('loop.example.com', ['127.0.0.1'])
    const res = await create(closed, closedKey, { url: 'https://loop.example.com/hook' })
    expect(res.status, res.text).toBe(422)
    expect(res.json.error).toMatchObject({ code: 'BLOCKED_ADDRESS', param: 'url' })
    expect(res.json.error.message).toContain('resolves to 127.0.0.1')
  })

  it('bad URLs and types answer 422 with their param and what to do', async () => {
    answers.set('hooks.example.com', [PUBLIC])
    const cases: [unknown, string, RegExp][] = [
      [{ url: 'not a url' }, 'url', /absolute URL/],
      [{ url: 'ftp://hooks.example.com/x' }, 'url', /https/],
      [{ url: 'http://hooks.example.com/x' }, 'url', /https:\/\//],
      [{ url: 'https://user:pw@hooks.example.com/x' }, 'url', /no user or password/],
      [{ url: 'https://nowhere.example.com/x' }, 'url', /does not resolve/],
      [{ url: 'https://hooks.example.com/x', types: ['site.exploded'] }, 'types', /Unknown event type "site.exploded"/],
      [{ url: 'https://hooks.example.com/x', colour: 'red' }, 'colour', /./],
    ]
    for (const [body, param, message] of cases) {
      const res = await create(closed, closedKey, body)
      expect(res.status, res.text).toBe(422)
      expect(res.json.error.param, res.text).toBe(param)
      expect(res.json.error.message).toMatch(message)
    }
    const fine = await create(closed, closedKey, { url: 'https://hooks.example.com/x', types: ['key.created'] })
    expect(fine.status, fine.text).toBe(201)
  })

  it('a name that changes its answer after the check: the delivery is refused, nothing reaches loopback', async () => {
    const receiver = new WebhookReceiver()
    answers.set('rebind.example.com', [PUBLIC])
    const a = await closed.register()
    const made = await create(closed, a.key, { url: `https://rebind.example.com:${receiver.port}/hook` })
    expect(made.status, made.text).toBe(201)
    answers.set('rebind.example.com', ['127.0.0.1'])
    closed.services.events.record({ type: 'key.created', accountId: a.accountId, data: {} })
    await drain(closed)
    const [d] = (await closed.call('GET', `/api/v1/webhooks/${made.json.data.id}/deliveries/`, { key: a.key })).json.data
    expect(d).toMatchObject({ status: 'pending', attempts: 1, last_code: null })
    expect(d.last_error).toContain('resolves to 127.0.0.1')
    expect(receiver.received).toHaveLength(0)
    receiver.stop()
  })

  it('the connection goes to the address the check returned, resolved once per attempt (the name is not looked up again)', async () => {
    const receiver = new WebhookReceiver()
    answers.set('internal.example.com', ['127.0.0.1'])
    const made = await create(open, openKey, { url: `http://internal.example.com:${receiver.port}/in` })
    expect(made.status, made.text).toBe(201)
    asked.length = 0
    const event = open.services.events.record({ type: 'key.revoked', accountId: openAccount, data: {} })
    await drain(open)
    await receiver.until(1)
    expect(receiver.received[0]).toMatchObject({ id: event.id, host: `internal.example.com:${receiver.port}`, path: '/in' })
    expect(() => verifiedBy(made.json.data.secret, receiver.received[0]!, open.clock.now())).not.toThrow()
    expect(asked.filter((h) => h === 'internal.example.com')).toEqual(['internal.example.com'])
    await open.call('DELETE', `/api/v1/webhooks/${made.json.data.id}/`, { key: openKey })
    receiver.stop()
  })

  it('a redirect (to loopback) is not followed: the delivery failed with the 3xx, and is retried to the same URL', async () => {
    const inside = new WebhookReceiver()
    const outside = new WebhookReceiver()
    outside.answer = () => new Response(null, { status: 302, headers: { location: inside.url('/secret') } })
    const made = await create(open, openKey, { url: outside.url() })
    expect(made.status, made.text).toBe(201)
    open.services.events.record({ type: 'site.up', accountId: openAccount, data: {} })
    await drain(open)
    const [d] = (await open.call('GET', `/api/v1/webhooks/${made.json.data.id}/deliveries/`, { key: openKey })).json.data
    expect(d).toMatchObject({ status: 'pending', last_code: 302 })
    expect(d.last_error).toContain('redirects are not followed')
    expect(inside.received).toHaveLength(0)
    expect(outside.received).toHaveLength(1)
    await open.call('DELETE', `/api/v1/webhooks/${made.json.data.id}/`, { key: openKey })
    inside.stop()
    outside.stop()
  })
})

describe('the endpoints API', () => {
  it('create shows the secret once; list, get, update and delete; another account sees 404; a read key is refused', async () => {
    answers.set('agent.example.com', [PUBLIC])
    const owner = await closed.register()
    const made = await create(closed, owner.key, { url: 'https://agent.example.com/hooks', types: ['deployment.succeeded'] })
    expect(made.status, made.text).toBe(201)
    const id = made.json.data.id as string
    expect(made.json.data).toMatchObject({ url: 'https://agent.example.com/hooks', types: ['deployment.succeeded'], state: 'active', disabled_reason: null })
    const listed = await closed.call('GET', '/api/v1/webhooks/', { key: owner.key })
    expect(listed.json.data.map((e: any) => e.id)).toEqual([id])
    expect(listed.text).not.toContain(made.json.data.secret)
    const changed = await closed.call('PATCH', `/api/v1/webhooks/${id}/`, { key: owner.key, body: { types: [], state: 'disabled' } })
    expect(changed.status, changed.text).toBe(200)
    expect(changed.json.data).toMatchObject({ types: [], state: 'disabled', disabled_reason: 'by_owner' })
    const again = await closed.call('PATCH', `/api/v1/webhooks/${id}/`, { key: owner.key, body: { state: 'active' } })
    expect(again.json.data).toMatchObject({ state: 'active', disabled_reason: null })
    const blocked = await closed.call('PATCH', `/api/v1/webhooks/${id}/`, { key: owner.key, body: { url: 'https://10.1.2.3/' } })
    expect(blocked.status).toBe(422)
    expect(blocked.json.error).toMatchObject({ code: 'BLOCKED_ADDRESS', param: 'url' })

    const stranger = await closed.register()
    for (const [method, path] of [['GET', `${id}/`], ['PATCH', `${id}/`], ['DELETE', `${id}/`], ['POST', `${id}/rotate-secret/`], ['GET', `${id}/deliveries/`]] as const) {
      const res = await closed.call(method, `/api/v1/webhooks/${path}`, { key: stranger.key, body: method === 'PATCH' ? { types: [] } : undefined })
      expect(res.status, `${method} ${path}: ${res.text}`).toBe(404)
    }
    expect((await closed.call('GET', '/api/v1/webhooks/', { key: stranger.key })).json.data).toEqual([])

    const readKey = await closed.call('POST', '/api/v1/keys/create/', { key: owner.key, body: { scopes: ['read'] } })
    const refused = await closed.call('GET', '/api/v1/webhooks/', { key: readKey.json.data.api_key })
    expect(refused.status).toBe(403)

    const gone = await closed.call('DELETE', `/api/v1/webhooks/${id}/`, { key: owner.key })
    expect(gone.status, gone.text).toBe(200)
    expect((await closed.call('GET', `/api/v1/webhooks/${id}/`, { key: owner.key })).status).toBe(404)
  })
})
