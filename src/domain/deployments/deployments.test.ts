import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'
import { RecordingRuntime } from '../../../test/helpers/recording-runtime'
import { storedEvents } from '../../../test/helpers/events-read'
import type { ExecResult } from '../../drivers/runtime/types'
import { DeploymentsRepository } from './repository'
import { DEPLOY_JOB } from './service'

/**
 * Deployments in-process on a real SQLite store and the real job runner; the container is the
 * recording runtime with a home folder and scripted command results (test/site-operations.e2e.test.ts
 * runs real hooks in real containers).
 */
class ExecRuntime extends RecordingRuntime {
  homes = mkdtempSync(join(tmpdir(), 'deploy-homes-'))
  execs: { slug: string; cmd: string[] }[] = []
  /** What the next exec answers; a promise lets a test hold a deployment mid-run. */
  results: (ExecResult | Promise<ExecResult>)[] = []

  override async homePath(slug: string) {
    const home = join(this.homes, slug)
    mkdirSync(home, { recursive: true })
    return home
  }

  override async exec(slug: string, cmd?: string[]): Promise<ExecResult> {
    this.execs.push({ slug, cmd: cmd ?? [] })
    return (await this.results.shift()) ?? { exitCode: 0, output: '' }
  }
}

const runtime = new ExecRuntime()
const h = inProcess({ runtime })
const repo = new DeploymentsRepository(h.services.store)
afterAll(async () => {
  await h.close()
  runtime.close()
  rmSync(runtime.homes, { recursive: true, force: true })
})

let ipCounter = 0
async function buy(sku = 'svc_starter_monthly') {
  const slug = `dep-${Math.random().toString(36).slice(2, 8)}`
  const created = await h.call('POST', '/api/v1/acp/checkouts/', { body: { sku }, headers: { 'x-forwarded-for': `198.18.0.${++ipCounter}` } })
  const { id, checkout_secret: secret } = created.json.data
  await h.call('POST', `/api/v1/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: slug, buyer_email: 'd@example.com' } })
  const done = await h.call('POST', `/api/v1/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
  await h.services.jobs.drain()
  const key = done.json.data.api_key as string
  const site = h.services.guard.require(h.services.keys.authenticate(key), slug, 'owned')
  return { slug, key, site }
}

const withHook = async (slug: string) => writeFileSync(join(await runtime.homePath(slug), 'deploy.sh'), 'echo hi\n')
const deployment = (slug: string, key: string, id: string) => h.call('GET', `/api/v1/sites/${slug}/deployments/${id}/`, { key }).then((r) => r.json.data)

describe('deployments', () => {
  it('a deploy requested while one is still queued returns that one', async () => {
    const { slug, key, site } = await buy()
    const first = h.services.deployments.trigger(site)
    const second = h.services.deployments.trigger(site)
    expect(second.id).toBe(first.id)
    await h.services.jobs.drain()
    expect((await deployment(slug, key, first.id)).status).toBe('succeeded')
    const third = h.services.deployments.trigger(site)
    expect(third.id).not.toBe(first.id)
    await h.services.jobs.drain()
  })

  it('runs the deployments of one site one at a time, in order', async () => {
    const { slug, key, site } = await buy()
    await withHook(slug)
    let release!: (r: ExecResult) => void
    runtime.results.push(new Promise<ExecResult>((r) => (release = r)), { exitCode: 0, output: 'second\n' })
    const first = h.services.deployments.trigger(site)
    await waitFor(async () => (await deployment(slug, key, first.id)).status === 'running')
    const second = h.services.deployments.trigger(site)
    await Bun.sleep(50)
    expect((await deployment(slug, key, second.id)).status).toBe('queued')
    release({ exitCode: 0, output: 'first\n' })
    await h.services.jobs.drain()
    const [a, b] = [await deployment(slug, key, first.id), await deployment(slug, key, second.id)]
    expect([a.status, b.status]).toEqual(['succeeded', 'succeeded'])
    expect(a.output).toContain('first')
    expect(b.output).toContain('second')
    expect(Date.parse(b.started_at)).toBeGreaterThanOrEqual(Date.parse(a.finished_at))
    const list = await h.call('GET', `/api/v1/sites/${slug}/deployments/`, { key })
    expect(list.json.data.map((d: { id: string }) => d.id)).toEqual([second.id, first.id])
  })

  it('on a vps site reloads the web server first, and a failed reload stops the deployment before the hook', async () => {
    const { slug, key, site } = await buy('svc_business_monthly')
    await withHook(slug)
    const before = runtime.execs.length
    runtime.results.push({ exitCode: 1, output: 'nginx: [error] open() "/tmp/nginx.pid" failed\n' })
    const d = h.services.deployments.trigger(site)
    await h.services.jobs.drain()
    const done = await deployment(slug, key, d.id)
    expect(done.status).toBe('failed')
    expect(done.error).toMatch(/Reloading the web server failed \(exit code 1\)/)
    expect(done.output).toContain('nginx: [error]')
    const calls = runtime.execs.slice(before)
    expect(calls).toHaveLength(1)
    expect(calls[0]!.cmd.join(' ')).toContain('nginx -c /etc/berth/nginx.conf -s reload')
  })

  it('notes when the output was cut, and names a killed hook', async () => {
    const { slug, key, site } = await buy()
    await withHook(slug)
    runtime.results.push({ exitCode: 137, output: 'x'.repeat(64 * 1024) })
    const d = h.services.deployments.trigger(site)
    await h.services.jobs.drain()
    const done = await deployment(slug, key, d.id)
    expect(done.status).toBe('failed')
    expect(done.error).toMatch(/exited with code 137 \(killed: it ran past 300 s or out of memory\)/)
    expect(done.output).toContain('(output cut at 64 KiB)')
  })

  it('fails with the reason when the container is not running', async () => {
    const { slug, key, site } = await buy()
    await runtime.stopSite(slug)
    const d = h.services.deployments.trigger(site)
    await h.services.jobs.drain()
    const done = await deployment(slug, key, d.id)
    expect(done).toMatchObject({ status: 'failed', output: '' })
    expect(done.error).toMatch(/is not running/)
  })

  it('marks a deployment a stop interrupted as failed instead of running its hook again', async () => {
    const { slug, key, site } = await buy()
    await withHook(slug)
    const d = h.services.deployments.trigger(site)
    // What a kill -9 mid-run leaves: the deployment running, its job queued again by the next start.
    await h.services.jobs.drain()
    repo.start(d.id, h.clock.now())
    h.services.jobs.enqueue(DEPLOY_JOB, d.id)
    const before = runtime.execs.length
    h.services.jobs.kick()
    await h.services.jobs.drain()
    const done = await deployment(slug, key, d.id)
    expect(done.status).toBe('failed')
    expect(done.error).toMatch(/restarted while this deployment ran/)
    expect(runtime.execs.length).toBe(before)
  })

  it('answers 409 for a site pending deletion', async () => {
    const { slug, key } = await buy()
    expect((await h.call('DELETE', `/api/v1/sites/${slug}/delete/`, { key })).status).toBe(200)
    const res = await h.call('POST', `/api/v1/sites/${slug}/deploy/`, { key })
    expect(res.status).toBe(409)
    expect((await h.call('GET', `/api/v1/sites/${slug}/deployments/`, { key })).status).toBe(200)
  })
})

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await Bun.sleep(10)
  }
}

// deployment.succeeded and deployment.failed (issue 41): each recorded with the deployment's end,
// holding its view.
const accountOf = (site: { accountId: string }) => site.accountId
const deploymentEvents = (site: { accountId: string; slug: string }) => storedEvents(h, accountOf(site)).filter((e) => e.type.startsWith('deployment.') && e.site_slug === site.slug)

describe('deployment events', () => {
  it('deployment.succeeded with the deployment view (less its output), once it ends', async () => {
    const { site } = await buy()
    const d = h.services.deployments.trigger(site)
    expect(deploymentEvents(site)).toEqual([])
    await h.services.jobs.drain()
    const events = deploymentEvents(site)
    expect(events.map((e) => e.type)).toEqual(['deployment.succeeded'])
    expect(events[0]).toMatchObject({ site_id: site.id, site_slug: site.slug })
    expect(events[0]!.data).toMatchObject({ id: d.id, site_slug: site.slug, status: 'succeeded', error: null, rollback_of: null })
    expect(events[0]!.data.finished_at).toEqual(expect.any(String))
    expect(events[0]!.data).not.toHaveProperty('output')
  })

  it('deployment.failed with its error when the hook fails', async () => {
    const { slug, site } = await buy()
    await withHook(slug)
    runtime.results.push({ exitCode: 3, output: 'boom\n' })
    const d = h.services.deployments.trigger(site)
    await h.services.jobs.drain()
    const events = deploymentEvents(site)
    expect(events.map((e) => e.type)).toEqual(['deployment.failed'])
    expect(events[0]!.data).toMatchObject({ id: d.id, status: 'failed' })
    expect(events[0]!.data.error).toContain('exited with code 3')
  })

  it('a deploy refused (another account\'s site: 404) records nothing', async () => {
    const { slug, site } = await buy()
    const other = await buy()
    const refused = await h.call('POST', `/api/v1/sites/${slug}/deploy/`, { key: other.key })
    expect(refused.status).toBe(404)
    await h.services.jobs.drain()
    expect(deploymentEvents(site)).toEqual([])
  })
})
