import { chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect } from 'vitest'
import { inProcess, type InProcess } from './in-process'
import { RecordingRuntime } from './recording-runtime'

/**
 * A recording runtime that gives each site a real home folder (a page and a log, owned by the
 * site user), for in-process tests of what Berth does to sites' files: snapshots, restores, the
 * files API. `onPause` runs as a freeze begins; the freeze lasts until the promise it returns settles.
 */
export class HomeRuntime extends RecordingRuntime {
  readonly root = mkdtempSync(join(tmpdir(), 'berth-homes-'))
  paused: string[] = []
  onPause?: (slug: string) => void | Promise<void>

  async homePath(slug: string): Promise<string> {
    const home = join(this.root, slug)
    if (!existsSync(home)) {
      mkdirSync(join(home, 'public'), { recursive: true })
      mkdirSync(join(home, 'logs'))
      writeFileSync(join(home, 'public', 'index.html'), '<h1>hello</h1>')
      writeFileSync(join(home, 'logs', 'access.log'), 'GET / 200\n')
      for (const p of ['', 'public', 'public/index.html', 'logs', 'logs/access.log']) chownSync(join(home, p), 1000, 1000)
    }
    return home
  }

  async withSitePaused<T>(slug: string, fn: () => Promise<T>): Promise<T> {
    this.paused.push(slug)
    await this.onPause?.(slug)
    return fn()
  }
}

/**
 * The in-process API on a HomeRuntime, for the file (or the describe) it is called in: after its
 * tests, the API and the runtime are closed and the homes removed. `options` as inProcess's.
 */
export function inProcessWithHomes(options: Omit<Parameters<typeof inProcess>[0] & object, 'runtime'> = {}): { runtime: HomeRuntime; h: InProcess } {
  const runtime = new HomeRuntime()
  const h = inProcess({ runtime, ...options })
  afterAll(async () => {
    await h.close()
    runtime.close()
    rmSync(runtime.root, { recursive: true, force: true })
  })
  return { runtime, h }
}

let ipCounter = 0

/** Buys a site in-process with a direct test payment and runs its provisioning; its slug, key and id. */
export async function buyInProcess(h: InProcess, sku: string, stem = 'ar'): Promise<{ slug: string; key: string; siteId: string }> {
  const slug = `${stem}-${Math.random().toString(36).slice(2, 8)}`
  ipCounter++
  const ip = `198.18.${Math.floor(ipCounter / 250)}.${ipCounter % 250}`
  const created = await h.call('POST', '/api/v1/acp/checkouts/', { body: { sku }, headers: { 'x-forwarded-for': ip } })
  const { id, checkout_secret: secret } = created.json.data
  await h.call('POST', `/api/v1/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: slug } })
  const done = await h.call('POST', `/api/v1/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
  expect(done.status, done.text).toBe(201)
  await h.services.jobs.drain()
  const site = h.services.store.sqlite.query('SELECT id FROM sites WHERE slug = ?').get(slug) as { id: string }
  return { slug, key: done.json.data.api_key, siteId: site.id }
}
