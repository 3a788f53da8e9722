import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateX25519Identity, identityToRecipient } from 'age-encryption'
import { afterAll, describe, expect, it } from 'vitest'
import { buyInProcess, HomeRuntime } from '../../../test/helpers/home-runtime'
import { inProcess } from '../../../test/helpers/in-process'

/**
 * The copies off the box through the API, in-process (the real services, jobs, archive store, GNU
 * tar and a FolderDestination): what GET /status/ and a site's backup list say of them.
 */
const root = mkdtempSync(join(tmpdir(), 'berth-offsite-api-'))
const runtime = new HomeRuntime()
const h = inProcess({ runtime, env: { BERTH_OFFSITE_URL: `file://${root}`, BERTH_OFFSITE_AGE_RECIPIENTS: await identityToRecipient(await generateX25519Identity()) } })
const off = inProcess({ runtime })
afterAll(async () => {
  await h.services.offsite?.copier.idle()
  await h.close()
  await off.close()
  runtime.close()
  rmSync(runtime.root, { recursive: true, force: true })
  rmSync(root, { recursive: true, force: true })
})

describe('copies off the box, as the API tells them', () => {
  it('GET /status/ says whether copies are on and how old the last store copy is', async () => {
    expect((await off.call('GET', '/api/v1/status/')).json.data.offsite).toEqual({ enabled: false, last_store_copy_age_seconds: null })
    expect(off.services.offsite).toBeNull()
    expect((await h.call('GET', '/api/v1/status/')).json.data.offsite).toEqual({ enabled: true, last_store_copy_age_seconds: null })
    await h.services.offsite!.copier.runNow()
    h.clock.advance(42_000)
    expect((await h.call('GET', '/api/v1/status/')).json.data.offsite).toEqual({ enabled: true, last_store_copy_age_seconds: 42 })
  })

  it("a site's backups say where each is kept: local at once, offsite once its copy is made", async () => {
    const site = await buyInProcess(h, 'svc_starter_monthly')
    expect(h.services.archives.scheduleBackups()).toBe(1)
    // The copy waits for a pass: hold it by letting the job run with the destination away.
    rmSync(root, { recursive: true, force: true })
    await h.services.jobs.drain()
    await h.services.offsite!.copier.idle()
    const local = (await h.call('GET', `/api/v1/sites/${site.slug}/backups/`, { key: site.key })).json.data
    expect(local).toMatchObject([{ status: 'ready', copies: ['local'] }])
    const one = await h.call('GET', `/api/v1/sites/${site.slug}/backups/${local[0].id}/`, { key: site.key })
    expect(one.json.data.copies).toEqual(['local'])

    // The destination is back: the next pass after the back-off copies it.
    mkdirSync(root)
    h.clock.advance(30_000)
    await h.services.offsite!.copier.runNow()
    const copied = (await h.call('GET', `/api/v1/sites/${site.slug}/backups/`, { key: site.key })).json.data
    expect(copied).toMatchObject([{ id: local[0].id, copies: ['local', 'offsite'] }])

    const plain = await buyInProcess(off, 'svc_starter_monthly')
    off.services.archives.scheduleBackups()
    await off.services.jobs.drain()
    expect((await off.call('GET', `/api/v1/sites/${plain.slug}/backups/`, { key: plain.key })).json.data).toMatchObject([{ status: 'ready', copies: ['local'] }])
  })
})
