import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api } from './helpers/binary'
import { viaEdge } from './helpers/purchase'
import { waitFor, type Lab } from './lab/cluster-lab'
import { AGENT_PORT, joinNode, labWithSite, longestOutage as outage, stopLabWithFigures, type ControlPlane, type JoinedNode } from './lab/berth-cluster'

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
  ({ lab, control, b, site } = await labWithSite(LAB_NAME, { image: 'berth/static:1', sku: 'svc_starter_monthly', slugPrefix: 'inc', activeWithinMs: 120_000 }))
}, 180_000)

afterAll(async () => {
  expect(await stopLabWithFigures(LAB_NAME, { lab, control }, 'cluster incidents e2e', figures)).toEqual([])
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

interface Sample { before: string; edge: number; after: string; error: string | null; at: number }
const view = async () => {
  const r = await api(control.url, 'GET', `/sites/${site.slug}/`, { key: site.key }).catch(() => null)
  return { status: (r?.json?.data?.status as string | undefined) ?? 'error', error: (r?.json?.data?.error as string | null | undefined) ?? null }
}

/**
 * Polls the site's view, its edge, and its view again, one after the other, until `done` settles.
 * A sample whose edge answered 502 or 503 while the views before and after it both said `active`
 * with no error is a site that does not serve shown as serving (the transitions cannot hide
 * between two views: the site goes down once and comes back once).
 */
function pollBoth(done: Promise<unknown>): Promise<Sample[]> {
  const samples: Sample[] = []
  let over = false
  void done.finally(() => (over = true)).catch(() => {})
  return (async () => {
    while (!over) {
      const before = await view()
      const edge = await viaEdge(control.url, site.slug).then((r) => r.status, () => 0)
      const after = await view()
      samples.push({ before: before.status, edge, after: after.status, error: after.error ?? before.error, at: performance.now() })
      await Bun.sleep(20)
    }
    return samples
  })()
}

/** Polls the edge alone, as fast as it answers, until `done` settles: [when, status] of each answer. */
function pollEdge(done: Promise<unknown>): Promise<[number, number][]> {
  const seen: [number, number][] = []
  let over = false
  void done.finally(() => (over = true)).catch(() => {})
  return (async () => {
    while (!over) {
      const status = await viaEdge(control.url, site.slug).then((r) => r.status, () => 0)
      seen.push([performance.now(), status])
      await Bun.sleep(10)
    }
    return seen
  })()
}


/**
 * A move polled from outside (view, edge, view; and the edge alone): never `active` without an
 * error while the edge answers 502/503, no 502 at all, and the move's "did not serve for" within
 * 600 ms of the outage the edge showed here (the polls are some tens of ms apart).
 */
async function watchedMove(args: string[], label: string): Promise<void> {
  const move = control.cli(args, { allowFailure: true })
  const [both, edge] = [pollBoth(move), pollEdge(move)]
  const moved = await move
  const [samples, seen] = [await both, await edge]
  // Once the command returns, the edge serves the site from its new container (it measured so).
  const after = await viaEdge(control.url, site.slug)
  expect(moved.code, moved.stdout + moved.stderr).toBe(0)
  const lying = samples.filter((s) => (s.edge === 502 || s.edge === 503) && s.before === 'active' && s.after === 'active')
  const bad = [...samples.map((s) => s.edge), ...seen.map(([, e]) => e)].filter((e) => e === 502)
  const seenOut = outage(seen)
  const reported = moved.json.unavailable_ms as number
  figures[label] = `did not serve for ${reported} ms as the move says, ${Math.round(seenOut)} ms at the edge polled here; edge 503 in ${seen.filter(([, e]) => e === 503).length}, 502 in ${bad.length} of ${seen.length + samples.length} answers; recovering in ${samples.filter((s) => s.after === 'recovering').length} of ${samples.length} views`
  expect(lying, `views said active while the edge answered 503/502: ${JSON.stringify(lying.slice(0, 3))}`).toEqual([])
  expect(bad, 'the edge answered 502 during the move').toEqual([])
  expect(samples.some((s) => s.after === 'recovering' && s.error !== null), 'a view during the move says recovering, with why').toBe(true)
  expect(moved.json.edge_serves).toBe(true)
  expect(after.status).toBe(200)
  expect(Math.abs(reported - seenOut), `reported ${reported} ms, the edge showed ${Math.round(seenOut)} ms`).toBeLessThan(600)
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
    await watchedMove(['sites', 'move', site.slug, '--to', b.id, '--json'], 'move to B')
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

  it('takes a site again once joined: the moves back and away serve at once after they return, never active with a 503 behind, no 502, and say how long the edge did not serve', async () => {
    b = await joinNode(lab, control, 'B')
    expect(b.agent.output() + '').toBeDefined()
    expect((await nodes()).find((n) => n.id === b.id)?.state).toBe('active')
    const content = (await api(control.url, 'GET', `/sites/${site.slug}/files/read/?path=public/index.html`, { key: site.key })).json.data.content as string
    const started = performance.now()
    await watchedMove(['sites', 'move', site.slug, '--to', b.id, '--json'], 'move back')
    expect(performance.now() - started).toBeLessThan(60_000)
    expect(await nodeOf(site.slug)).toBe(b.id)
    await served('the page from the joined-again B', content, 5_000)
    // And away again, to the control plane (where the outside run saw 1.1 s reported for 35 s of 503).
    await watchedMove(['sites', 'move', site.slug, '--to', 'control', '--json'], 'move to control')
    await served('the page back on the control plane', content, 5_000)
  }, 180_000)
})
