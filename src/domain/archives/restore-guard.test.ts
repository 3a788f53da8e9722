import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { buyInProcess, inProcessWithHomes } from '../../../test/helpers/home-runtime'
import type { ArchiveRow } from '../../store/schema'
import { DomainError, renderMessage } from '../errors'
import type { ArchivesRepository } from './repository'
import { RestoreGuard } from './restore-guard'

describe('RestoreGuard', () => {
  let restoring: Partial<ArchiveRow> | undefined
  const guard = new RestoreGuard({ restoringOf: () => restoring } as unknown as ArchivesRepository)
  const site = { id: 'site-1', slug: 'shop' }
  const settled = async (p: Promise<void>) => {
    let done = false
    void p.then(() => (done = true))
    await Bun.sleep(5)
    return done
  }

  it('lets a restore wait until every change counted before it has ended, each ended once', async () => {
    expect(await settled(guard.drained(site.id))).toBe(true)
    const first = guard.beginChange(site)
    const second = guard.beginChange(site)
    const drained = guard.drained(site.id)
    first()
    first()
    expect(await settled(drained)).toBe(false)
    expect(await settled(guard.drained('another-site'))).toBe(true)
    second()
    expect(await settled(drained)).toBe(true)
  })

  it('refuses a change while an archive of the site is restoring, naming the route to poll', () => {
    restoring = { id: 'a1b2', kind: 'backup' }
    try {
      const err = (() => {
        try {
          guard.beginChange(site)
        } catch (e) {
          return e as DomainError
        }
      })()
      expect(err).toBeInstanceOf(DomainError)
      expect(err!.kind).toBe('conflict')
      // The REST door renders getBackup as GET /sites/shop/backups/a1b2/ (src/api/http/operation-routes.test.ts).
      expect(renderMessage(err!.said as never, (ref) => `<${ref.operation} ${Object.values(ref.params).join(' ')}>`)).toBe("A restore of site 'shop' from backup a1b2 is running; retry when <getBackup shop a1b2> shows ready.")
    } finally {
      restoring = undefined
    }
  })
})

/** The files API against restores, in-process: real API, jobs, store, tar; homes in a folder. */
describe('the files API during a restore', () => {
  const { runtime, h } = inProcessWithHomes()
  const api = (slug: string, rest: string) => `/api/v1/sites/${slug}/${rest}`

  async function snapshotOf(slug: string, key: string): Promise<string> {
    const taken = await h.call('POST', api(slug, 'snapshot/'), { key })
    expect(taken.status, taken.text).toBe(200)
    await h.services.jobs.drain()
    return taken.json.data.id
  }

  it('answers 409 to writes, uploads, mkdir and deletes while the restore runs; reads still work; all work after', async () => {
    const { slug, key } = await buyInProcess(h, 'svc_business_monthly', 'rg')
    const home = await runtime.homePath(slug)
    const id = await snapshotOf(slug, key)
    let thaw!: () => void
    let frozen!: () => void
    const inFreeze = new Promise<void>((done) => (frozen = done))
    runtime.onPause = (paused) => {
      if (paused !== slug) return
      frozen()
      return new Promise((done) => (thaw = done))
    }
    try {
      expect((await h.call('POST', api(slug, `snapshots/${id}/restore/`), { key })).status).toBe(200)
      await inFreeze
      const changes = [
        ['files/write/', { path: 'public/new.html', content: 'x' }],
        ['files/upload/', { path: 'public/new.bin', content_b64: 'eA==' }],
        ['files/mkdir/', { path: 'public/new' }],
        ['files/delete/', { path: 'public/index.html' }],
      ] as const
      for (const [route, body] of changes) {
        const res = await h.call('POST', api(slug, route), { key, body })
        expect(res.status, `${route} ${res.text}`).toBe(409)
        expect(res.json.error).toMatchObject({ code: 'CONFLICT', message: `A restore of site '${slug}' from snapshot ${id} is running; retry when GET /sites/${slug}/snapshots/${id}/ shows ready.` })
      }
      expect((await h.call('GET', api(slug, 'files/read/?path=public/index.html'), { key })).status).toBe(200)
      expect((await h.call('GET', api(slug, 'files/?path=public'), { key })).status).toBe(200)
    } finally {
      runtime.onPause = undefined
      thaw?.()
    }
    await h.services.jobs.drain()
    expect((await h.call('GET', api(slug, `snapshots/${id}/`), { key })).json.data.status).toBe('ready')
    expect(readdirSync(join(home, 'public'))).toEqual(['index.html'])
    for (const [route, body] of [['files/write/', { path: 'public/new.html', content: 'x' }], ['files/delete/', { path: 'public/new.html' }]] as const) {
      expect((await h.call('POST', api(slug, route), { key, body })).status).toBe(200)
    }
  })

  it('a restore accepted while a change runs swaps the files only once that change has ended', async () => {
    const { slug, key } = await buyInProcess(h, 'svc_business_monthly', 'rg')
    const home = await runtime.homePath(slug)
    const id = await snapshotOf(slug, key)
    // A folder big enough that deleting it takes many turns of the event loop (the delete
    // yields every 500 entries).
    const junk = join(home, 'junk')
    mkdirSync(junk)
    const count = 20_000
    for (let i = 0; i < count; i++) writeFileSync(join(junk, `f${i}`), '')
    let junkAtFreeze: boolean | undefined
    runtime.onPause = (paused) => {
      if (paused === slug) junkAtFreeze = existsSync(junk)
    }
    try {
      const deleting = h.call('POST', api(slug, 'files/delete/'), { key, body: { path: 'junk' } })
      while (existsSync(junk) && readdirSync(junk).length === count) await new Promise((done) => setImmediate(done))
      expect(existsSync(junk), 'the delete finished before the restore was asked for; make the folder bigger').toBe(true)
      expect((await h.call('POST', api(slug, `snapshots/${id}/restore/`), { key })).status).toBe(200)
      await h.services.jobs.drain()
      const deleted = await deleting
      expect(deleted.status, deleted.text).toBe(200)
      expect(deleted.json.data).toEqual({ path: 'junk', type: 'dir', removed: count + 1 })
    } finally {
      runtime.onPause = undefined
    }
    expect(junkAtFreeze).toBe(false)
    expect(readdirSync(home).sort()).toEqual(['logs', 'public'])
    expect(readFileSync(join(home, 'public', 'index.html'), 'utf8')).toBe('<h1>hello</h1>')
    expect((await h.call('GET', api(slug, `snapshots/${id}/`), { key })).json.data).toMatchObject({ status: 'ready', error: null })
  }, 60_000)
})
