import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api } from './helpers/binary'
import { buyDirect, viaEdge, waitForSite } from './helpers/purchase'
import { startLab, waitFor, type Lab } from './lab/cluster-lab'
import { leftovers } from './lab/lab-host'
import { AGENT_PORT, joinNode, startControlPlane, type ControlPlane, type JoinedNode } from './lab/berth-cluster'

/**
 * The cluster's incident paths (issue 36, items 1 and 2), on a two-node lab of its own (runs beside
 * test/cluster.e2e): a drained node whose agent answers is never evacuated but emptied by moves,
 * losing nothing, and put back by undrain; a box whose engine was killed is evacuated (--force
 * saying what is lost), removed, joined again as docs/cluster.md says, and takes a site again.
 * One site, reused throughout.
 */
// BERTH_INCIDENTS_LAB_NAME runs a second copy beside another worktree's (lab names are exclusive on a machine).
const LAB_NAME = process.env.BERTH_INCIDENTS_LAB_NAME ?? 'incid'
let lab: Lab
let control: ControlPlane
let b: JoinedNode
const figures: Record<string, string> = {}
let site: { slug: string; key: string }

beforeAll(async () => {
  lab = await startLab(LAB_NAME)
  control = await startControlPlane(lab, { images: ['berth/static:1'] })
  b = await joinNode(lab, control, 'B')
  const slug = `inc${Math.random().toString(36).slice(2, 6)}`
  const key = (await buyDirect(control.url, { slug, sku: 'svc_starter_monthly' })).data.api_key as string
  expect(await waitForSite(control.url, key, slug, 120_000)).toBe('active')
  site = { slug, key }
}, 180_000)

afterAll(async () => {
  await control?.berth.stop().catch(() => {})
  await lab?.stop()
  console.log(`cluster incidents e2e: ${Object.entries(figures).map(([k, v]) => `${k}: ${v}`).join('; ')}`)
  expect(leftovers(LAB_NAME)).toEqual([])
}, 60_000)

async function nodes(): Promise<{ id: string; state: string; sites: string[] }[]> {
  const { json } = await control.cli(['nodes', 'list', '--json'])
  return json.nodes ?? json
}
const nodeOf = async (slug: string) => (await nodes()).find((n) => n.sites.includes(slug))?.id

async function write(content: string): Promise<void> {
  const res = await api(control.url, 'POST', `/sites/${site.slug}/files/write/`, { key: site.key, body: { path: 'public/index.html', content } })
  expect(res.status, res.text).toBeLessThan(300)
}

async function served(what: string, content: string, ms = 30_000): Promise<void> {
  let last = ''
  await waitFor(what, ms, async () => {
    const res = await viaEdge(control.url, site.slug)
    last = `${res.status} ${res.text.slice(0, 60)}`
    return res.status === 200 && res.text === content
  }).catch((err) => {
    throw new Error(`${(err as Error).message}; the edge answered last ${last}\nberth serve:\n${control.berth.output().split('\n').filter((l) => l.includes(site.slug)).slice(-20).join('\n')}`)
  })
}

/** Polls the site's view and its edge together until `done` settles; each sample is [view status, edge status]. */
function pollBoth(done: Promise<unknown>): Promise<[string, number][]> {
  const samples: [string, number][] = []
  let over = false
  void done.finally(() => (over = true)).catch(() => {})
  return (async () => {
    while (!over) {
      const [view, edge] = await Promise.all([
        api(control.url, 'GET', `/sites/${site.slug}/`, { key: site.key }).then((r) => r.json?.data?.status as string, () => 'error'),
        viaEdge(control.url, site.slug).then((r) => r.status, () => 0),
      ])
      samples.push([view, edge])
      await Bun.sleep(100)
    }
    return samples
  })()
}

describe('a drained node whose agent answers', () => {
  it('is never evacuated (drained or not, --force too) but emptied by moves: the file written just before is there', async () => {
    if ((await nodeOf(site.slug)) !== b.id) {
      const moved = await control.cli(['sites', 'move', site.slug, '--to', b.id], { allowFailure: true })
      expect(moved.code, moved.stdout + moved.stderr).toBe(0)
    }
    const token = `just-before-${Date.now()}`
    await write(token)
    await served('the page on B', token)
    expect((await control.cli(['nodes', 'drain', b.id])).code).toBe(0)
    for (const args of [[], ['--force']]) {
      const refused = await control.cli(['nodes', 'evacuate', b.id, ...args], { allowFailure: true })
      expect(refused.code, refused.stdout + refused.stderr).toBe(1)
      expect(refused.stderr).toContain(`berth nodes drain ${b.id} --move`)
    }
    // Nothing was restored: the site still runs on B with the file written just before.
    expect(await nodeOf(site.slug)).toBe(b.id)
    await served('the page still on B', token, 5_000)

    const drained = await control.cli(['nodes', 'drain', b.id, '--move', '--json'], { allowFailure: true })
    expect(drained.code, drained.stdout + drained.stderr).toBe(0)
    expect(drained.json).toMatchObject({ id: b.id, state: 'draining', sites: [], moves: [{ slug: site.slug, to: 'control', result: 'moved' }] })
    figures['drain --move'] = `did not serve for ${drained.json.moves[0].unavailable_ms} ms`
    expect(await nodeOf(site.slug)).toBe('control')
    await served('the page moved off B, files carried over', token)
    const read = await api(control.url, 'GET', `/sites/${site.slug}/files/read/?path=public/index.html`, { key: site.key })
    expect(read.json?.data?.content, read.text).toBe(token)
  }, 240_000)

  it('is put back by undrain (or resume) without a re-join, and takes a site again', async () => {
    const undrained = await control.cli(['nodes', 'undrain', b.id, '--json'], { allowFailure: true })
    expect(undrained.code, undrained.stdout + undrained.stderr).toBe(0)
    expect(undrained.json).toMatchObject({ id: b.id, state: 'active' })
    const resumed = await control.cli(['nodes', 'resume', b.id, '--json'])
    expect(resumed.json).toMatchObject({ state: 'active' })
    const moved = await control.cli(['sites', 'move', site.slug, '--to', b.id], { allowFailure: true })
    expect(moved.code, moved.stdout + moved.stderr).toBe(0)
    expect(await nodeOf(site.slug)).toBe(b.id)
    await served('the page on B again', (await api(control.url, 'GET', `/sites/${site.slug}/files/read/?path=public/index.html`, { key: site.key })).json.data.content)
  }, 120_000)
})

describe('a box whose engine was killed, evacuated, removed and joined again', () => {
  it('is evacuated with --force saying what is lost, removed (its Swarm node too), and refused at the join until its kept networks are cleared', async () => {
    const token = `before-the-kill-${Date.now()}`
    await write(token)
    await served('the page on B', token)
    // The move's backup (the archive an evacuation takes) holds the page before this write.
    const oldSwarmId = (await lab.docker('B', 'info', '-f', '{{.Swarm.NodeID}}')).trim()
    await lab.stopEngine('B')
    const killed = performance.now()
    await waitFor('B down', 30_000, async () => (await nodes()).find((n) => n.id === b.id)?.state === 'down')
    const evacuated = await control.cli(['nodes', 'evacuate', b.id, '--force'], { allowFailure: true })
    expect(evacuated.code, evacuated.stdout + evacuated.stderr).toBe(0)
    expect(evacuated.stdout).toMatch(new RegExp(`${site.slug}: on control, data from .*: LOST its changes of the last \\d+`))
    figures.evacuate = evacuated.stdout.trim().split('\n').slice(1).join(' ')
    await waitFor('the evacuated site served from the control plane', 60_000, async () => (await viaEdge(control.url, site.slug)).status === 200)
    figures['kill to served'] = `${((performance.now() - killed) / 1000).toFixed(1)} s`

    const removed = await control.cli(['nodes', 'remove', b.id], { allowFailure: true })
    expect(removed.code, removed.stdout + removed.stderr).toBe(0)
    expect(await lab.docker('A', 'node', 'ls', '-q')).not.toContain(oldSwarmId)

    // The box comes back (its engine restarts, still in the old Swarm) and is joined again as
    // docs/cluster.md says: stop the agent, remove its data folder, join with a new token.
    await b.agent.kill()
    await lab.startEngine('B')
    rmSync(b.dataDir, { recursive: true, force: true })
    const join2 = await control.joinCommand()
    const refused = await lab.exec('B', [control.binary, 'node', 'join', join2.url, '--token', join2.token, '--fingerprint', join2.fingerprint, '--address', lab.address('B'),
      '--port', String(AGENT_PORT), '--name', 'lab-b2', '--docker-socket', lab.dockerSocket('B'), '--data', b.dataDir, '--no-systemd'], { allowFailure: true })
    expect(refused.code, refused.stdout + refused.stderr).toBe(1)
    expect(refused.stderr).toContain('moby#37087')
    expect(refused.stderr).toContain('network/files/local-kv.db')
    expect(existsSync(join(b.dataDir, 'node.json'))).toBe(false)
    // What the refusal says to run, as the lab runs its engine (no systemd here).
    await lab.stopEngine('B', { graceful: true })
    rmSync(join(lab.root, 'b', 'data', 'network', 'files', 'local-kv.db'))
    await lab.startEngine('B')
  }, 240_000)

  it('takes a site again once joined: the move back serves at once after it returns (never active with a 503 behind it)', async () => {
    b = await joinNode(lab, control, 'B')
    expect(b.agent.output() + '').toBeDefined()
    expect((await nodes()).find((n) => n.id === b.id)?.state).toBe('active')
    const content = (await api(control.url, 'GET', `/sites/${site.slug}/files/read/?path=public/index.html`, { key: site.key })).json.data.content as string
    const started = performance.now()
    const move = control.cli(['sites', 'move', site.slug, '--to', b.id, '--json'], { allowFailure: true })
    const during = pollBoth(move)
    const moved = await move
    const samples = await during
    expect(moved.code, moved.stdout + moved.stderr).toBe(0)
    expect(performance.now() - started).toBeLessThan(60_000)
    expect(await nodeOf(site.slug)).toBe(b.id)
    // Once the move says done, the edge serves it (an `active` with a 503 behind it is what the outside run saw for minutes).
    const after = performance.now()
    await served('the page from the joined-again B', content, 10_000)
    // The 502s at the stop (issue 36 item 8: the edge tries the stopped container before it hears
    // of the stop) are counted, not asserted: that part of item 8 is not fixed here.
    figures['move back'] = `did not serve for ${moved.json.unavailable_ms} ms as the move says; edge 503 in ${samples.filter(([, e]) => e === 503).length}, 502 in ${samples.filter(([, e]) => e === 502).length} of ${samples.length} samples during it; served ${(performance.now() - after).toFixed(0)} ms after it returned`
  }, 180_000)
})
