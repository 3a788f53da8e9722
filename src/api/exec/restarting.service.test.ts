import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'
import { untilActive } from '../../../test/helpers/site-fixture'
import { startInContainer } from '../../drivers/runtime/processes'
import { SiteRestartingError } from '../../drivers/runtime/types'

// Issue 36, item 8: a command against a site whose container is restarting (its main process
// exited and the engine starts it again, after a growing wait) answered 500; it answers 409 with
// when to retry. On the real engine: the site's container is swapped for one whose process exits
// every 0.2 s under the same name and labels, as a site whose web server keeps crashing.
const V1 = '/api/v1'
const docker = new Docker({ socketPath: '/var/run/docker.sock' })
const h = inProcess({ runtime: 'docker' })
let site: { slug: string; key: string }
let containerId: string

beforeAll(async () => {
  const slug = `restart-${Math.random().toString(36).slice(2, 8)}`
  const co = await h.call('POST', `${V1}/acp/checkouts/`, { body: { sku: 'svc_starter_monthly' } })
  const q = `?checkout_secret=${co.json.data.checkout_secret}`
  await h.call('POST', `${V1}/acp/checkouts/${co.json.data.id}/update/${q}`, { body: { requested_slug: slug, buyer_email: 'restart@example.com' } })
  const done = await h.call('POST', `${V1}/acp/checkouts/${co.json.data.id}/complete/${q}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
  expect(done.status, done.text).toBe(201)
  site = { slug, key: done.json.data.api_key }
  await untilActive(h, [slug])
  // The same name, labels, image and user; a process that exits after 0.2 s, restarted by the engine.
  const [found] = await docker.listContainers({ filters: { label: [`dev.berth.site-slug=${slug}`] } })
  const old = await docker.getContainer(found!.Id).inspect()
  await docker.getContainer(old.Id).remove({ force: true })
  const crashing = await docker.createContainer({
    name: old.Name.slice(1), Image: old.Config.Image, User: old.Config.User, Labels: old.Config.Labels, WorkingDir: old.Config.WorkingDir,
    Cmd: ['sh', '-c', 'sleep 0.2; exit 1'],
    HostConfig: { RestartPolicy: { Name: 'unless-stopped', MaximumRetryCount: 0 } },
  })
  await crashing.start()
  containerId = crashing.id
}, 120_000)
afterAll(async () => {
  await docker.getContainer(containerId).remove({ force: true }).catch(() => {})
  await h.close()
}, 60_000)

/**
 * Waits until the engine has just begun a restart's wait (the container seen running, then
 * restarting), from the fifth restart on: a wait of 1.6 s and more is ahead, which the request
 * lands in (the engine doubles it at each restart from 0.1 s).
 */
async function untilRestarting(): Promise<Docker.ContainerInspectInfo> {
  const deadline = Date.now() + 60_000
  let wasRunning = false
  for (;;) {
    const info = await docker.getContainer(containerId).inspect()
    if (info.State.Restarting && wasRunning && info.RestartCount >= 5) return info
    wasRunning = !info.State.Restarting
    if (Date.now() > deadline) throw new Error(`the container is not restarting: ${JSON.stringify(info.State)}`)
    await Bun.sleep(5)
  }
}

describe('exec against a restarting container', () => {
  it('answers 409 CONFLICT with Retry-After and a message saying it restarts and when to retry', async () => {
    await untilRestarting()
    const res = await h.call('POST', `${V1}/sites/${site.slug}/exec/`, { key: site.key, body: { command: ['true'] } })
    expect(res.status, res.text).toBe(409)
    expect(res.json.error.code).toBe('CONFLICT')
    expect(res.json.error.message).toBe(
      `The site '${site.slug}' is restarting: its container's main process exited and the engine starts it again, waiting longer each time it exits (up to a minute). ` +
      `Retry in 10 seconds; if it keeps restarting, its error log (GET /sites/${site.slug}/logs/ with type=error) says why it exits.`,
    )
    expect(res.headers.get('retry-after')).toBe('10')
  }, 60_000)

  it('says the same when the container began restarting after it was inspected (the engine answers 409 to the exec)', async () => {
    const info = await untilRestarting()
    // The inspection as it was a moment before: running.
    const stale = { ...info, State: { ...info.State, Restarting: false, Running: true } }
    await expect(startInContainer(docker, stale, site.slug, { Cmd: ['true'], AttachStdout: true }, () => null)).rejects.toBeInstanceOf(SiteRestartingError)
  }, 60_000)
})
