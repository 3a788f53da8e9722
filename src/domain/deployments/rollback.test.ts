import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { buyInProcess as buy, HomeRuntime } from '../../../test/helpers/home-runtime'
import { inProcess } from '../../../test/helpers/in-process'
import type { ExecResult } from '../../drivers/runtime/types'
import { DeploymentsRepository } from './repository'

/**
 * Deployments' recorded files and rollbacks in-process: the real API, jobs, SQLite store, archive
 * store and GNU tar on real home folders; the container is the recording runtime
 * (test/rollback.e2e.test.ts does the same on the binary, Docker and the edge).
 */
/** Real homes; commands (the web server's reload) answer success and are recorded. */
class ExecHomeRuntime extends HomeRuntime {
  execs: string[] = []
  override async exec(slug: string, cmd?: string[]): Promise<ExecResult> {
    this.execs.push(`${slug}: ${(cmd ?? []).join(' ')}`)
    return { exitCode: 0, output: '' }
  }
}

const runtime = new ExecHomeRuntime()
const h = inProcess({ runtime, env: { BERTH_ARCHIVES_DEPLOYMENTS_KEPT: '2' } })
const repo = new DeploymentsRepository(h.services.store)
afterAll(async () => {
  await h.close()
  runtime.close()
  rmSync(runtime.root, { recursive: true, force: true })
})

const path = (slug: string, rest = '') => `/api/v1/sites/${slug}/${rest}`
const page = async (slug: string) => readFileSync(join(await runtime.homePath(slug), 'public', 'index.html'), 'utf8')
const setPage = async (slug: string, body: string) => writeFileSync(join(await runtime.homePath(slug), 'public', 'index.html'), body)
const deploymentArchives = (siteId: string) =>
  h.services.store.sqlite.query("SELECT id, status, storage_key FROM archives WHERE site_id = ? AND kind = 'deployment'").all(siteId) as { id: string; status: string; storage_key: string }[]
const stored = (siteId: string) => {
  const dir = join(h.services.config.archives.dir, siteId)
  return existsSync(dir) ? readdirSync(dir) : []
}

async function deploy(slug: string, key: string) {
  const res = await h.call('POST', path(slug, 'deploy/'), { key })
  expect(res.status, res.text).toBe(200)
  await h.services.jobs.drain()
  return (await h.call('GET', path(slug, `deployments/${res.json.data.id}/`), { key })).json.data
}

async function rollback(slug: string, key: string, id: string) {
  return h.call('POST', path(slug, `deployments/${id}/rollback/`), { key })
}

describe('rollback', () => {
  it('puts back the files the first deployment recorded, as a new deployment naming it; logs and .ssh stay as they are', async () => {
    const { slug, key, siteId } = await buy(h, 'svc_business_monthly', 'rb')
    const home = await runtime.homePath(slug)
    await setPage(slug, 'first')
    const first = await deploy(slug, key)
    expect(first).toMatchObject({ status: 'succeeded', rollback_of: null, files_recorded: true })
    expect(first.output).toMatch(/==> Recorded the files for a rollback: \d+ files/)

    await setPage(slug, 'second')
    writeFileSync(join(home, 'public', 'new.html'), 'added later')
    const second = await deploy(slug, key)
    expect(second.files_recorded).toBe(true)
    mkdirSync(join(home, '.ssh'), { recursive: true })
    writeFileSync(join(home, '.ssh', 'authorized_keys'), 'ssh-ed25519 AAAA added-after\n')
    writeFileSync(join(home, 'logs', 'access.log'), 'GET /later 200\n')

    const res = await rollback(slug, key, first.id)
    expect(res.status, res.text).toBe(200)
    expect(res.json.data).toMatchObject({ status: 'queued', rollback_of: first.id, files_recorded: true })
    await h.services.jobs.drain()

    const done = (await h.call('GET', path(slug, `deployments/${res.json.data.id}/`), { key })).json.data
    expect(done.status, done.error).toBe('succeeded')
    expect(done.output).toContain(`==> Put back the files of deployment ${first.id}`)
    expect(await page(slug)).toBe('first')
    expect(existsSync(join(home, 'public', 'new.html'))).toBe(false)
    expect(readFileSync(join(home, '.ssh', 'authorized_keys'), 'utf8')).toContain('added-after')
    expect(readFileSync(join(home, 'logs', 'access.log'), 'utf8')).toBe('GET /later 200\n')
    // The reload followed, as for a deploy.
    expect(done.output).toContain('==> Reloading nginx and PHP-FPM')
    expect(runtime.execs.filter((e) => e.startsWith(`${slug}: `) && e.includes('nginx -c /etc/berth/nginx.conf -s reload'))).toHaveLength(3)

    const list = (await h.call('GET', path(slug, 'deployments/'), { key })).json.data
    expect(list.map((d: { id: string; rollback_of: string | null }) => [d.id, d.rollback_of])).toEqual([[done.id, first.id], [second.id, null], [first.id, null]])
    // Neither snapshots nor backups list a deployment's files.
    expect((await h.call('GET', path(slug, 'snapshots/'), { key })).json.data).toEqual([])
    expect((await h.call('GET', path(slug, 'backups/'), { key })).json.data.filter((b: { kind: string }) => b.kind !== 'backup')).toEqual([])
    // The rollback shares the first deployment's archive; it is ready again.
    expect(deploymentArchives(siteId).map((a) => a.status)).toEqual(['ready', 'ready'])
  })

  it('keeps the files of the newest archives.deployments_kept deployments only; an older one answers 409', async () => {
    const { slug, key, siteId } = await buy(h, 'svc_starter_monthly', 'rb')
    const made = []
    for (const body of ['one', 'two', 'three']) {
      await setPage(slug, body)
      made.push(await deploy(slug, key))
    }
    const list = (await h.call('GET', path(slug, 'deployments/'), { key })).json.data
    expect(list.map((d: { files_recorded: boolean }) => d.files_recorded)).toEqual([true, true, false])
    expect(deploymentArchives(siteId)).toHaveLength(2)
    expect(stored(siteId)).toHaveLength(2)

    const res = await rollback(slug, key, made[0].id)
    expect(res.status).toBe(409)
    expect(res.json.error).toMatchObject({ code: 'CONFLICT', param: 'deployment_id' })
    expect(res.json.error.message).toMatch(/has no recorded files to put back/)
    expect(await page(slug)).toBe('three')

    // A rollback of a rollback puts back the same files.
    const back = await rollback(slug, key, made[1].id)
    await h.services.jobs.drain()
    expect(await page(slug)).toBe('two')
    await setPage(slug, 'changed')
    const again = await rollback(slug, key, back.json.data.id)
    expect(again.status, again.text).toBe(200)
    await h.services.jobs.drain()
    expect(await page(slug)).toBe('two')
  })

  it('answers 409 for a deployment made before deployments recorded files, 404 for another site or account', async () => {
    const { slug, key, siteId } = await buy(h, 'svc_starter_monthly', 'rb')
    const old = repo.insert({ id: crypto.randomUUID(), siteId, createdAt: h.clock.now() - 60_000 })
    repo.finish(old.id, { status: 'succeeded', output: '', error: null, at: h.clock.now() - 59_000 })
    const res = await rollback(slug, key, old.id)
    expect(res.status).toBe(409)
    expect(res.json.error.message).toMatch(/made before Berth recorded deployments' files/)

    const other = await buy(h, 'svc_starter_monthly', 'rb')
    const theirs = await deploy(other.slug, other.key)
    // Their deployment under my site, and their site with my key.
    expect((await rollback(slug, key, theirs.id)).status).toBe(404)
    const foreign = await rollback(other.slug, key, theirs.id)
    expect(foreign.status).toBe(404)
    expect((await rollback(slug, key, crypto.randomUUID())).json.error).toMatchObject({ code: 'NOT_FOUND', param: 'deployment_id' })
  })

  it('is never merged with a queued deploy, and a deploy asked for after it is a deploy of its own', async () => {
    const { slug, key } = await buy(h, 'svc_starter_monthly', 'rb')
    await setPage(slug, 'kept')
    const first = await deploy(slug, key)
    const site = h.services.guard.require(h.services.keys.authenticate(key), slug, 'owned')
    const queued = h.services.deployments.trigger(site)
    const back = (await rollback(slug, key, first.id)).json.data
    expect(back.id).not.toBe(queued.id)
    const later = h.services.deployments.trigger(site)
    expect(later.id).toBe(queued.id)
    await h.services.jobs.drain()
    const list = (await h.call('GET', path(slug, 'deployments/'), { key })).json.data
    expect(list.map((d: { status: string }) => d.status)).toEqual(['succeeded', 'succeeded', 'succeeded'])
  })

  it('settles the archive of a rollback a stop cut short, so the files API takes changes again', async () => {
    const { slug, key, siteId } = await buy(h, 'svc_starter_monthly', 'rb')
    const first = await deploy(slug, key)
    const back = (await rollback(slug, key, first.id)).json.data
    // What a kill -9 mid-swap leaves: the deployment running and its archive restoring.
    repo.start(back.id, h.clock.now())
    const archiveId = deploymentArchives(siteId)[0]!.id
    h.services.store.sqlite.query("UPDATE archives SET status = 'restoring' WHERE id = ?").run(archiveId)
    const blocked = await h.call('POST', path(slug, 'files/write/'), { key, body: { path: 'public/x.html', content: 'x' } })
    expect(blocked.status).toBe(409)
    expect(blocked.json.error.message).toMatch(/A rollback of site/)
    h.services.jobs.kick()
    await h.services.jobs.drain()
    const done = (await h.call('GET', path(slug, `deployments/${back.id}/`), { key })).json.data
    expect(done).toMatchObject({ status: 'failed' })
    expect(done.error).toMatch(/roll back again/)
    expect(deploymentArchives(siteId)[0]!.status).toBe('ready')
  })
})
