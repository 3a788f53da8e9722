import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * Rollback end to end (issue 27 item 4): the compiled binary, a real Docker engine and the edge.
 * Files go in through the files API, each deploy records them, a rollback puts the first
 * deployment's back and the edge serves its bytes again. `archives.deployments_kept` is 2 here,
 * so a third deployment makes the first one's files go (a rollback to it is then 409).
 */
let berth: Berth
let mine: { slug: string; key: string }
let theirs: { slug: string; key: string }
let php: { slug: string; key: string }

beforeAll(async () => {
  // SSH ports of vps sites from a range of their own: other suites' Berths share the engine.
  const sshBase = 20_000 + Math.floor(Math.random() * 400) * 100
  berth = await startBerth({ env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour', BERTH_ARCHIVES_DEPLOYMENTS_KEPT: '2', BERTH_SSH_PORT_RANGE: `${sshBase}-${sshBase + 99}` } })
  ;[mine, theirs, php] = await Promise.all([buy(), buy(), buy('svc_business_monthly')])
  instanceOf(berth)
}, 120_000)
afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
}, 60_000)

async function buy(sku = 'svc_starter_monthly') {
  const slug = uniqueSlug('rb')
  const { data } = await buyDirect(berth.url, { sku, slug })
  expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
  return { slug, key: data.api_key as string }
}

const call = (site: { slug: string; key: string }, method: string, rest: string, body?: unknown) => api(berth.url, method, `/sites/${site.slug}/${rest}`, { key: site.key, body })

async function write(site: { slug: string; key: string }, path: string, content: string) {
  const res = await call(site, 'POST', 'files/write/', { path, content })
  expect(res.status, res.text).toBe(200)
}

/** Polls the deployment until it has finished; returns it. */
async function finished(site: { slug: string; key: string }, id: string) {
  const deadline = Date.now() + 60_000
  for (;;) {
    const res = await call(site, 'GET', `deployments/${id}/`)
    expect(res.status, res.text).toBe(200)
    if (res.json.data.status === 'succeeded' || res.json.data.status === 'failed') return res.json.data
    if (Date.now() > deadline) throw new Error(`deployment ${id} still ${res.json.data.status}`)
    await Bun.sleep(100)
  }
}

async function deploy(site: { slug: string; key: string }) {
  const res = await call(site, 'POST', 'deploy/')
  expect(res.status, res.text).toBe(200)
  return finished(site, res.json.data.id)
}

describe('POST /sites/{slug}/deployments/{id}/rollback/', () => {
  const first = `<h1>first ${crypto.randomUUID()}</h1>\n`
  const second = `<h1>second ${crypto.randomUUID()}</h1>\n`
  let one: { id: string }
  let two: { id: string }

  it('puts back the first deployment\'s files: the edge serves its bytes again, and the history names it', async () => {
    await write(mine, 'public/index.html', first)
    one = await deploy(mine)
    expect(one).toMatchObject({ status: 'succeeded', rollback_of: null, files_recorded: true })
    expect((await viaEdge(berth.url, mine.slug, '/')).text).toBe(first)

    await write(mine, 'public/index.html', second)
    await write(mine, 'public/added.html', 'added after the first deployment')
    two = await deploy(mine)
    expect(two).toMatchObject({ status: 'succeeded', files_recorded: true })
    expect((await viaEdge(berth.url, mine.slug, '/')).text).toBe(second)
    expect((await viaEdge(berth.url, mine.slug, '/added.html')).status).toBe(200)

    const res = await call(mine, 'POST', `deployments/${one.id}/rollback/`)
    expect(res.status, res.text).toBe(200)
    expect(res.json.data).toMatchObject({ status: 'queued', rollback_of: one.id })
    const back = await finished(mine, res.json.data.id)
    expect(back.status, back.error).toBe('succeeded')
    expect(back.output).toContain(`==> Put back the files of deployment ${one.id}`)

    const page = await viaEdge(berth.url, mine.slug, '/')
    expect(page.status).toBe(200)
    expect(page.text).toBe(first)
    expect((await viaEdge(berth.url, mine.slug, '/added.html')).status).toBe(404)
    // The files API sees the same files.
    expect((await call(mine, 'GET', 'files/read/?path=public/index.html')).json.data.content).toBe(first)

    const list = (await call(mine, 'GET', 'deployments/')).json.data as { id: string; rollback_of: string | null; files_recorded: boolean }[]
    expect(list.map((d) => [d.id, d.rollback_of])).toEqual([[back.id, one.id], [two.id, null], [one.id, null]])
    // Two kept: the rollback (sharing the first's files) and the second; the first's record is forgotten.
    expect(list.map((d) => d.files_recorded)).toEqual([true, true, false])
    // A deployment's files are neither a snapshot nor a backup.
    expect((await call(mine, 'GET', 'snapshots/')).json.data).toEqual([])
    expect(((await call(mine, 'GET', 'backups/')).json.data as { kind: string }[]).every((b) => b.kind === 'backup')).toBe(true)
  }, 120_000)

  it('answers 409 for a deployment whose files are no longer kept, and changes nothing', async () => {
    const res = await call(mine, 'POST', `deployments/${one.id}/rollback/`)
    expect(res.status).toBe(409)
    expect(res.json.error).toMatchObject({ code: 'CONFLICT', param: 'deployment_id' })
    expect(res.json.error.message).toMatch(/has no recorded files to put back/)
    expect((await call(mine, 'GET', 'deployments/')).json.data).toHaveLength(3)
    // The second's files are still kept: rolling back to it works.
    const again = await call(mine, 'POST', `deployments/${two.id}/rollback/`)
    expect(again.status, again.text).toBe(200)
    expect((await finished(mine, again.json.data.id)).status).toBe('succeeded')
    expect((await viaEdge(berth.url, mine.slug, '/')).text).toBe(second)
  }, 60_000)

  it("answers 404 for another account's deployment, whichever site it is asked through", async () => {
    const theirDeployment = await deploy(theirs)
    // Their site with my key.
    const foreign = await api(berth.url, 'POST', `/sites/${theirs.slug}/deployments/${theirDeployment.id}/rollback/`, { key: mine.key })
    expect(foreign.status).toBe(404)
    // Their deployment through my site.
    const crossed = await call(mine, 'POST', `deployments/${theirDeployment.id}/rollback/`)
    expect(crossed.status).toBe(404)
    expect(crossed.json.error).toMatchObject({ code: 'NOT_FOUND', param: 'deployment_id' })
    // My deployment through their site, with their key.
    expect((await call(theirs, 'POST', `deployments/${two.id}/rollback/`)).status).toBe(404)
    expect((await call(theirs, 'GET', 'deployments/')).json.data).toHaveLength(1)
  }, 60_000)

  it('on a vps site (nginx and PHP-FPM) puts back the first PHP page without a restart: the reload serves it', async () => {
    const version = (n: string) => `<?php echo "version ${n} " . PHP_VERSION;\n`
    await write(php, 'public/index.php', version('one'))
    const first = await deploy(php)
    expect(first.status, first.error).toBe('succeeded')
    expect((await viaEdge(berth.url, php.slug, '/')).text).toMatch(/^version one \d/)
    await write(php, 'public/index.php', version('two'))
    expect((await deploy(php)).status).toBe('succeeded')
    expect((await viaEdge(berth.url, php.slug, '/')).text).toMatch(/^version two \d/)

    const res = await call(php, 'POST', `deployments/${first.id}/rollback/`)
    expect(res.status, res.text).toBe(200)
    const back = await finished(php, res.json.data.id)
    expect(back.status, back.error).toBe('succeeded')
    expect(back.output).toContain('==> Reloading nginx and PHP-FPM')
    expect(back.output).not.toContain('Restarted')
    // PHP's opcache held version two; the reload emptied it.
    expect((await viaEdge(berth.url, php.slug, '/')).text).toMatch(/^version one \d/)
  }, 120_000)
})
