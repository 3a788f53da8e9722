import Docker from 'dockerode'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { buyDirect, readyCheckout, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { execIn, instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * Buying a site end to end on the compiled binary, a real Docker engine and a real Chromium:
 * no fakes. Sites are cleaned up by removing every container of this Berth instance.
 */
const docker = new Docker({ socketPath: '/var/run/docker.sock' })
const ARTIFACTS = join(import.meta.dirname, '..', 'test-results')

let berth: Berth
beforeAll(async () => {
  // Many purchases from one address: the 10/hour checkout limit has its own test below, on its own instance.
  berth = await startBerth({ env: { BERTH_CONTAINERS_RECONCILE_SECONDS: '2', BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour' } })
  instanceOf(berth)
}, 60_000)
afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
})

describe('buying a site', () => {
  it('direct purchase with pm_card_visa: 201 with api_key, the page answers through the edge, and the site is listed', async () => {
    const slug = uniqueSlug('direct')
    const { data } = await buyDirect(berth.url, { slug })
    expect(data.status).toBe('completed')
    expect(data.api_key).toMatch(/^svc_[0-9a-f]{48}$/)
    expect(data.site_slug).toBe(slug)
    expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
    const page = await viaEdge(berth.url, slug)
    expect(page.status).toBe(200)
    expect(page.text.toLowerCase()).toContain('<html')
    const list = await api(berth.url, 'GET', '/sites/', { key: data.api_key })
    expect(list.json.data.map((s: { slug: string }) => s.slug)).toEqual([slug])
    const who = await api(berth.url, 'GET', '/auth/whoami/', { key: data.api_key })
    expect(who.json.data.user.email).toBe('buyer@example.com')
    expect(who.json.data.account).toEqual({ sites: 1, active_subscriptions: 1 })
  })

  it('hosted purchase: Chromium pays on the hosted page, the next poll shows the key once', async () => {
    const slug = uniqueSlug('hosted')
    const { id, secret } = await readyCheckout(berth.url, { slug, sku: 'svc_starter_annual' })
    const done = await api(berth.url, 'POST', `/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: {} })
    expect(done.status).toBe(200)
    expect(done.json.data.status).toBe('awaiting_payment')
    expect(done.json.data.api_key).toBeUndefined()
    const payUrl = done.json.data.processor_checkout_url as string
    expect(payUrl).toMatch(/\/pay\/cs_test_[0-9a-f]+\/$/)

    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] })
    try {
      const page = await browser.newPage()
      await page.goto(payUrl)
      expect(await page.textContent('.banner')).toContain('TEST MODE')
      expect(await page.textContent('[data-testid=amount]')).toContain('70.00 CAD')
      // A declining card first: the page says so and the session still waits for payment.
      await page.fill('#card', '4000 0000 0000 0002')
      await page.fill('#exp', '12/34')
      await page.fill('#cvc', '123')
      await page.click('#submit')
      await page.waitForFunction(() => document.querySelector('#message')?.textContent?.includes('declined'))
      expect((await api(berth.url, 'GET', `/acp/checkouts/${id}/?checkout_secret=${secret}`)).json.data.status).toBe('awaiting_payment')
      await page.fill('#card', '4242 4242 4242 4242')
      await page.click('#submit')
      await page.waitForSelector('[data-testid=paid]')
      mkdirSync(ARTIFACTS, { recursive: true })
      await page.screenshot({ path: join(ARTIFACTS, 'hosted-payment-paid.png'), fullPage: true })
    } finally {
      await browser.close()
    }

    const first = await api(berth.url, 'GET', `/acp/checkouts/${id}/`, { headers: { 'x-checkout-secret': secret } })
    expect(first.json.data.status).toBe('completed')
    expect(first.json.data.api_key).toMatch(/^svc_[0-9a-f]{48}$/)
    const second = await api(berth.url, 'GET', `/acp/checkouts/${id}/`, { headers: { 'x-checkout-secret': secret } })
    expect(second.json.data.status).toBe('completed')
    expect(second.json.data.api_key).toBeUndefined()
    expect(await waitForSite(berth.url, first.json.data.api_key, slug)).toBe('active')
    expect((await viaEdge(berth.url, slug)).status).toBe(200)
  })

  it('a decline answers 402 and leaves the session ready; pm_card_visa then pays', async () => {
    const slug = uniqueSlug('decline')
    const { id, secret } = await readyCheckout(berth.url, { slug })
    const declined = await api(berth.url, 'POST', `/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa_chargeDeclined' } })
    expect(declined.status).toBe(402)
    expect(declined.json.error.code).toBe('PAYMENT_DECLINED')
    expect((await api(berth.url, 'GET', `/acp/checkouts/${id}/?checkout_secret=${secret}`)).json.data.status).toBe('ready')
    const paid = await api(berth.url, 'POST', `/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
    expect(paid.status).toBe(201)
    expect(paid.json.data.status).toBe('completed')
  })

  it('refuses wrong secrets (404), late updates (409), taken or reserved slugs and unknown SKUs (422)', async () => {
    const slug = uniqueSlug('rules')
    const { id, secret } = await readyCheckout(berth.url, { slug })
    for (const q of ['', '?checkout_secret=cks_wrong']) {
      const res = await api(berth.url, 'GET', `/acp/checkouts/${id}/${q}`)
      expect(res.status).toBe(404)
      expect(res.json.error.code).toBe('NOT_FOUND')
    }
    const late = await api(berth.url, 'POST', `/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { buyer_email: 'late@example.com' } })
    expect(late.status).toBe(409)
    expect(late.json.error.code).toBe('CONFLICT')
    // The slug is held by the ready session above, so another session cannot take it.
    const other = await api(berth.url, 'POST', '/acp/checkouts/', { body: { sku: 'svc_starter_monthly' } })
    const otherUrl = `/acp/checkouts/${other.json.data.id}/update/?checkout_secret=${other.json.data.checkout_secret}`
    for (const taken of [slug, 'www', 'admin']) {
      const res = await api(berth.url, 'POST', otherUrl, { body: { requested_slug: taken } })
      expect(res.status).toBe(422)
      expect(res.json.error.param).toBe('requested_slug')
    }
    const badSku = await api(berth.url, 'POST', '/acp/checkouts/', { body: { sku: 'svc_platinum_monthly' } })
    expect(badSku.status).toBe(422)
    expect(badSku.json.error.param).toBe('sku')
    const deprecated = await api(berth.url, 'POST', '/acp/checkouts/', { body: { sku: 'svc_legacy-basic_monthly' } })
    expect(deprecated.status).toBe(422)
  })

  it("another account's key gets 404 on the site; an account without sites lists none", async () => {
    const slug = uniqueSlug('owned')
    const { data } = await buyDirect(berth.url, { slug })
    const stranger = await api(berth.url, 'POST', '/auth/register/', { body: {} })
    const key = stranger.json.data.api_key
    const res = await api(berth.url, 'GET', `/sites/${slug}/`, { key })
    expect(res.status).toBe(404)
    expect(res.json.error.code).toBe('NOT_FOUND')
    expect((await api(berth.url, 'GET', '/sites/', { key })).json.data).toEqual([])
    expect((await api(berth.url, 'GET', `/sites/${slug}/`, { key: data.api_key })).status).toBe(200)
  })

  it('a site whose container is removed behind Berth’s back serves again within one reconcile period, files intact', async () => {
    const slug = uniqueSlug('drift')
    const { data } = await buyDirect(berth.url, { slug })
    expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
    const container = (await docker.listContainers({ filters: { label: [`dev.berth.site-slug=${slug}`] } }))[0]
    const marker = `marker-${Date.now()}`
    await execIn(container.Id, ['sh', '-c', `echo ${marker} > /home/site/public/marker.txt`])
    expect((await viaEdge(berth.url, slug, '/marker.txt')).text.trim()).toBe(marker)
    await docker.getContainer(container.Id).remove({ force: true })
    const deadline = Date.now() + 2_000 + 10_000
    let served = ''
    while (Date.now() < deadline) {
      const res = await viaEdge(berth.url, slug, '/marker.txt').catch(() => ({ status: 0, text: '' }))
      if (res.status === 200) {
        served = res.text.trim()
        break
      }
      await Bun.sleep(100)
    }
    expect(served).toBe(marker)
  })

  it('runs a purchased site isolated: limits of its plan, no privileges, no Docker socket, no way to its neighbour', async () => {
    const [a, b] = [uniqueSlug('iso-a'), uniqueSlug('iso-b')]
    const sa = await buyDirect(berth.url, { slug: a })
    const sb = await buyDirect(berth.url, { slug: b, sku: 'svc_business_monthly' })
    expect(await waitForSite(berth.url, sa.data.api_key, a)).toBe('active')
    expect(await waitForSite(berth.url, sb.data.api_key, b)).toBe('active')
    const [ca] = await docker.listContainers({ filters: { label: [`dev.berth.site-slug=${a}`] } })
    const [cb] = await docker.listContainers({ filters: { label: [`dev.berth.site-slug=${b}`] } })
    const info = await docker.getContainer(ca.Id).inspect()
    const hc = info.HostConfig
    expect(hc.Privileged).toBe(false)
    expect(hc.CapDrop).toEqual(['ALL'])
    expect(hc.CapAdd ?? []).toEqual([])
    expect(hc.SecurityOpt).toContain('no-new-privileges')
    expect(hc.Memory).toBe(256 * 1024 * 1024) // the starter plan's memory_mb
    expect(hc.NanoCpus).toBe(1e9)
    expect(hc.PidsLimit).toBeGreaterThan(0)
    expect(hc.NetworkMode).not.toBe('host')
    expect(hc.PidMode ?? '').not.toBe('host')
    expect(hc.IpcMode).not.toBe('host')
    expect(info.Config.User).toBe('1000:1000')
    expect(JSON.stringify(info.Mounts)).not.toContain('docker.sock')
    // The business plan's limits on the other site.
    expect((await docker.getContainer(cb.Id).inspect()).HostConfig.Memory).toBe(1024 * 1024 * 1024)
    // From inside: no capabilities, no new privileges, no Docker socket, not root.
    const status = await execIn(ca.Id, ['cat', '/proc/self/status'])
    expect(status).toMatch(/CapEff:\s+0000000000000000/)
    expect(status).toMatch(/NoNewPrivs:\s+1/)
    expect(await execIn(ca.Id, ['sh', '-c', 'test -e /var/run/docker.sock && echo present || echo absent'])).toContain('absent')
    expect(await execIn(ca.Id, ['id', '-u'])).toContain('1000')
    // A process in site A cannot open a connection to site B's container; the host can.
    const addressOf = async (id: string) => Object.values((await docker.getContainer(id).inspect()).NetworkSettings.Networks)[0].IPAddress
    const [aAddress, bAddress] = [await addressOf(ca.Id), await addressOf(cb.Id)]
    expect((await fetch(`http://${bAddress}:8080/`)).status).toBe(200)
    // busybox nc: its wget needs glibc's NSS at run time and crashes in the static image.
    const probe = (address: string) => ['sh', '-c', `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 2 ${address} 8080 | grep -q '^HTTP/' && echo reached || echo blocked`]
    // The probe works: site A reaches its own server on its own address.
    expect(await execIn(ca.Id, probe(aAddress))).toContain('reached')
    const attempt = await execIn(ca.Id, probe(bAddress))
    expect(attempt).toContain('blocked')
  })

  it('answers an unknown site host with a clear 404 page', async () => {
    const res = await viaEdge(berth.url, 'no-such-site-here')
    expect(res.status).toBe(404)
    expect(res.text).toContain('no-such-site-here')
  })
})

describe('resilience of provisioning', () => {
  it('kill -9 while a site is provisioning: after a restart there is exactly one site, and it ends active', async () => {
    const b = await startBerth()
    instanceOf(b)
    try {
      const slug = uniqueSlug('crash')
      const { data } = await buyDirect(b.url, { slug })
      await b.kill9()
      await b.restart()
      expect(await waitForSite(b.url, data.api_key, slug)).toBe('active')
      const sites = await api(b.url, 'GET', '/sites/', { key: data.api_key })
      expect(sites.json.data).toHaveLength(1)
      const containers = await docker.listContainers({ all: true, filters: { label: [`dev.berth.site-slug=${slug}`] } })
      expect(containers).toHaveLength(1)
      expect((await viaEdge(b.url, slug)).status).toBe(200)
    } finally {
      await b.dispose()
      await removeInstanceSites(b)
    }
  })

  it('the 11th checkout from one address within the hour gets 429', async () => {
    const b = await startBerth()
    try {
      for (let i = 0; i < 10; i++) expect((await api(b.url, 'POST', '/acp/checkouts/', { body: { sku: 'svc_starter_monthly' } })).status).toBe(201)
      const eleventh = await api(b.url, 'POST', '/acp/checkouts/', { body: { sku: 'svc_starter_monthly' } })
      expect(eleventh.status).toBe(429)
      expect(Number(eleventh.headers.get('retry-after'))).toBeGreaterThan(0)
    } finally {
      await b.dispose()
    }
  })
})
