import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'
import { untilActive } from '../../../test/helpers/site-fixture'

/**
 * The claim flow on real purchased sites (real SQLite, real Docker, the real agent script run in
 * the container), through the in-process API with a manual clock.
 */
const h = inProcess({ runtime: 'docker' })
afterAll(() => h.close())
const docker = new Docker({ socketPath: '/var/run/docker.sock' })

let ipCounter = 0
const ip = () => `198.20.${Math.floor(++ipCounter / 250)}.${ipCounter % 250}`

async function buy(stem: string): Promise<{ slug: string; key: string }> {
  const slug = `${stem}-${Math.random().toString(36).slice(2, 8)}`
  const created = await h.call('POST', '/api/v1/acp/checkouts/', { body: { sku: 'svc_starter_monthly' }, headers: { 'x-forwarded-for': ip() } })
  const { id, checkout_secret: secret } = created.json.data
  await h.call('POST', `/api/v1/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: slug, buyer_email: `${stem}@example.com` } })
  const done = await h.call('POST', `/api/v1/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
  expect(done.status, done.text).toBe(201)
  return { slug, key: done.json.data.api_key }
}

/** Runs a shell command in the site's container as the site user, as a tenant with a shell would. */
async function shell(slug: string, script: string): Promise<string> {
  const container = docker.getContainer(`berth-${h.services.instanceId}-${slug}`)
  const run = await container.exec({ Cmd: ['sh', '-c', script], User: '1000:1000', AttachStdout: true, AttachStderr: true, Tty: true })
  const stream = await run.start({ Tty: true })
  let out = ''
  stream.on('data', (c: Buffer) => (out += c.toString('utf8')))
  await new Promise((done) => stream.on('end', done))
  return out.replace(/\r/g, '')
}

const request = (slug: string, from = ip()) => h.call('POST', '/api/v1/keys/claim/request/', { body: { site_slug: slug }, headers: { 'x-forwarded-for': from } })
const claim = (token: string) => h.call('POST', '/api/v1/keys/claim/', { body: { claim_token: token }, headers: { 'x-forwarded-for': ip() } })

let a: { slug: string; key: string }
let b: { slug: string; key: string }
beforeAll(async () => {
  ;[a, b] = await Promise.all([buy('claim-a'), buy('claim-b')])
  await untilActive(h, [a.slug, b.slug])
}, 90_000)

describe('claim flow', () => {
  let token = ''

  it('writes the token into the site: ~/.svc/.claim_token, mode 600, owned by the site user', async () => {
    const res = await request(a.slug)
    expect(res.status, res.text).toBe(201)
    expect(res.json.data).toMatchObject({ site_slug: a.slug, token_path: '~/.svc/.claim_token' })
    expect(Date.parse(res.json.data.expires_at) - h.clock.now()).toBe(3600_000)
    const seen = (await shell(a.slug, 'stat -c "%a %u %g" ~/.svc ~/.svc/.claim_token; cat ~/.svc/.claim_token')).trim().split('\n')
    expect(seen.slice(0, 2)).toEqual(['700 1000 1000', '600 1000 1000'])
    token = seen[2]!
    expect(token).toMatch(/^svc_claim_[0-9a-f]{48}$/)
  })

  it('refuses a second request while a token is pending (422)', async () => {
    const res = await request(a.slug)
    expect(res.status).toBe(422)
    expect(res.json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'site_slug' })
    expect(res.json.error.message).toContain('already waiting')
  })

  it('trades the token for a site-scoped read/write key that works only on its site', async () => {
    const res = await claim(token)
    expect(res.status, res.text).toBe(201)
    expect(res.json.data).toMatchObject({ site_slug: a.slug, site_scoped: true, scopes: ['read', 'write'] })
    const key = res.json.data.api_key as string
    expect(key).toMatch(/^svc_[0-9a-f]{48}$/)
    expect((await h.call('GET', `/api/v1/sites/${a.slug}/`, { key })).status).toBe(200)
    expect((await h.call('GET', `/api/v1/sites/${a.slug}/modules/`, { key })).status).toBe(200)
    expect((await h.call('GET', `/api/v1/sites/${b.slug}/`, { key })).status).toBe(404)
    expect((await h.call('GET', '/api/v1/keys/', { key })).status).toBe(403)
    expect((await h.call('GET', '/api/v1/sites/', { key })).status).toBe(403)
    expect((await h.call('POST', '/api/v1/keys/create/', { key, body: { name: 'x' } })).status).toBe(403)
    // The owner sees it among the account's keys, site-scoped.
    const listed = (await h.call('GET', '/api/v1/keys/', { key: a.key })).json.data as { key_id: string; site_scoped: boolean }[]
    expect(listed.find((k) => k.key_id === res.json.data.key_id)?.site_scoped).toBe(true)
  })

  it('refuses the same token again, a random one, and a request while the claimed key is active (422)', async () => {
    expect((await claim(token)).json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'claim_token' })
    expect((await claim(`svc_claim_${'0'.repeat(48)}`)).status).toBe(422)
    const again = await request(a.slug)
    expect(again.status).toBe(422)
    expect(again.json.error.message).toContain('already has an active claimed key')
  })

  it('refuses an unknown site (422)', async () => {
    const res = await request('no-such-site-here')
    expect(res.status).toBe(422)
    expect(res.json.error.param).toBe('site_slug')
  })

  it('refuses an expired token (422), and a new request is possible after it expires', async () => {
    const first = await request(b.slug)
    expect(first.status).toBe(201)
    const expired = (await shell(b.slug, 'cat ~/.svc/.claim_token')).trim()
    h.clock.advance(3600_000)
    const res = await claim(expired)
    expect(res.status).toBe(422)
    expect(res.json.error.message).toContain('expired')
    expect((await request(b.slug)).status).toBe(201)
  })

  it('gives exactly one key to two concurrent claims of one token', async () => {
    const current = (await shell(b.slug, 'cat ~/.svc/.claim_token')).trim()
    const results = await Promise.all([claim(current), claim(current), claim(current)])
    expect(results.map((r) => r.status).sort()).toEqual([201, 422, 422])
    const keys = (await h.call('GET', '/api/v1/keys/', { key: b.key })).json.data as { site_scoped: boolean }[]
    expect(keys.filter((k) => k.site_scoped)).toHaveLength(1)
  })

  it('never writes through a symbolic link planted at the token file', async () => {
    // Revoke b's claimed key so it can be claimed again.
    const keys = (await h.call('GET', '/api/v1/keys/', { key: b.key })).json.data as { key_id: string; site_scoped: boolean }[]
    await h.call('POST', `/api/v1/keys/${keys.find((k) => k.site_scoped)!.key_id}/revoke/`, { key: b.key })
    await shell(b.slug, 'echo canary > /tmp/outside; rm -f ~/.svc/.claim_token; ln -s /tmp/outside ~/.svc/.claim_token')
    expect((await request(b.slug)).status).toBe(201)
    const after = (await shell(b.slug, 'cat /tmp/outside; [ -L ~/.svc/.claim_token ] && echo link || echo file; cat ~/.svc/.claim_token')).trim().split('\n')
    expect(after[0]).toBe('canary')
    expect(after[1]).toBe('file')
    expect(after[2]).toMatch(/^svc_claim_[0-9a-f]{48}$/)
    // A link at a root-owned file is replaced too, and the file is untouched.
    h.clock.advance(3600_000)
    const passwd = await shell(b.slug, 'sha256sum /etc/passwd')
    await shell(b.slug, 'rm -f ~/.svc/.claim_token; ln -s /etc/passwd ~/.svc/.claim_token')
    expect((await request(b.slug)).status).toBe(201)
    expect(await shell(b.slug, 'sha256sum /etc/passwd')).toBe(passwd)
    expect((await shell(b.slug, '[ -L ~/.svc/.claim_token ] && echo link || echo file')).trim()).toBe('file')
  })

  it('refuses (409) when the folder itself is a symbolic link, and writes nothing through it', async () => {
    h.clock.advance(3600_000)
    await shell(b.slug, 'mkdir -p /tmp/elsewhere; rm -rf ~/.svc; ln -s /tmp/elsewhere ~/.svc')
    const res = await request(b.slug)
    expect(res.status).toBe(409)
    expect(res.json.error.message).toContain('symbolic link')
    expect((await shell(b.slug, 'ls -A /tmp/elsewhere | wc -l')).trim()).toBe('0')
    // Nothing pending was left behind: once the link is gone, a request succeeds.
    await shell(b.slug, 'rm ~/.svc')
    expect((await request(b.slug)).status).toBe(201)
  })

  it('limits requests to 5 per hour per address (429)', async () => {
    const from = '198.21.0.1'
    const statuses = []
    for (let i = 0; i < 6; i++) statuses.push((await request('no-such-site-here', from)).status)
    expect(statuses).toEqual([422, 422, 422, 422, 422, 429])
  })
})
