import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'
import { RecordingRuntime } from '../../../test/helpers/recording-runtime'
import type { ExecResult } from '../../drivers/runtime/types'
import { storedEvents } from '../../../test/helpers/events-read'

/**
 * deployment.succeeded and deployment.failed (issue 41), in-process on a real SQLite store and
 * the real job runner, the container the recording runtime with scripted command results (as
 * deployments.test.ts): each recorded with the deployment's end, holding its view.
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
afterAll(async () => {
  await h.close()
  runtime.close()
  rmSync(runtime.homes, { recursive: true, force: true })
})

let ipCounter = 0
async function buy(sku = 'svc_starter_monthly') {
  const slug = `dev-${Math.random().toString(36).slice(2, 8)}`
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
