import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api } from './helpers/binary'
import { viaEdge } from './helpers/purchase'
import { waitFor, type Lab } from './lab/cluster-lab'
import { labWithSite, longestOutage as outage, stopLabWithFigures, type ControlPlane, type JoinedNode } from './lab/berth-cluster'

/**
 * How long a site on a node does not serve, as a visitor polling the edge sees it (issue 36 item
 * 8): a snapshot restore of a vps site on node B, and moves of it between B and the control
 * plane, on a two-node lab of its own. The edge is polled every 20 ms; the figure is the longest
 * run of answers other than 200. Bounds are docs/api.md's and docs/cluster.md's figures with room
 * for a loaded 2-core box.
 */
// BERTH_DOWNTIME_LAB_NAME runs a second copy beside another worktree's (lab names are exclusive on a machine).
const LAB_NAME = process.env.BERTH_DOWNTIME_LAB_NAME ?? 'downt'
let lab: Lab
let control: ControlPlane
let b: JoinedNode
let site: { slug: string; key: string }
const figures: Record<string, string> = {}

beforeAll(async () => {
  ({ lab, control, b, site } = await labWithSite(LAB_NAME, { image: 'berth/php:1', sku: 'svc_business_monthly', slugPrefix: 'dt', activeWithinMs: 180_000 }))
}, 300_000)

afterAll(async () => {
  expect(await stopLabWithFigures(LAB_NAME, { lab, control }, 'cluster downtime e2e', figures)).toEqual([])
}, 60_000)

async function nodeOf(slug: string): Promise<string | undefined> {
  const { json } = await control.cli(['nodes', 'list', '--json'])
  return ((json.nodes ?? json) as { id: string; sites: string[] }[]).find((n) => n.sites.includes(slug))?.id
}

async function write(content: string): Promise<void> {
  const res = await api(control.url, 'POST', `/sites/${site.slug}/files/write/`, { key: site.key, body: { path: 'public/page.html', content } })
  expect(res.status, res.text).toBeLessThan(300)
}

const page = () => viaEdge(control.url, site.slug, '/page.html').then((r) => ({ status: r.status, text: r.text }), () => ({ status: 0, text: '' }))

async function served(what: string, content: string, ms = 30_000): Promise<void> {
  await waitFor(what, ms, async () => {
    const res = await page()
    return res.status === 200 && res.text === content
  })
}

/** Polls the edge every 20 ms until `done` settled and the edge answered 200 (10 s at most after): [when, status, text] of each answer. */
function pollEdge(done: Promise<unknown>): Promise<[number, number, string][]> {
  const seen: [number, number, string][] = []
  let overAt: number | null = null
  void done.finally(() => (overAt = performance.now())).catch(() => {})
  return (async () => {
    while (overAt === null || (seen.at(-1)?.[1] !== 200 && performance.now() - overAt < 10_000)) {
      const res = await page()
      seen.push([performance.now(), res.status, res.text])
      await Bun.sleep(20)
    }
    return seen
  })()
}


const counts = (seen: [number, number, string][]) => {
  const by = new Map<number, number>()
  for (const [, s] of seen) by.set(s, (by.get(s) ?? 0) + 1)
  return [...by].map(([s, n]) => `${s}×${n}`).join(' ')
}

describe('a vps site on a node', () => {
  it('is restored from a snapshot with the edge not serving it for under 3.5 s', async () => {
    if ((await nodeOf(site.slug)) !== b.id) {
      const moved = await control.cli(['sites', 'move', site.slug, '--to', b.id], { allowFailure: true })
      expect(moved.code, moved.stdout + moved.stderr).toBe(0)
    }
    const kept = `kept-${Date.now()}`
    await write(kept)
    await served('the page on B', kept)
    const taken = await api(control.url, 'POST', `/sites/${site.slug}/snapshot/`, { key: site.key })
    expect(taken.status, taken.text).toBe(200)
    const id = taken.json.data.id as string
    await waitFor('the snapshot ready', 60_000, async () => (await api(control.url, 'GET', `/sites/${site.slug}/snapshots/${id}/`, { key: site.key })).json.data.status === 'ready')
    await write('changed since')
    await served('the change', 'changed since')

    const restoring = (async () => {
      const res = await api(control.url, 'POST', `/sites/${site.slug}/snapshots/${id}/restore/`, { key: site.key })
      expect(res.status, res.text).toBe(200)
      return waitFor('the restore done', 120_000, async () => {
        const a = (await api(control.url, 'GET', `/sites/${site.slug}/snapshots/${id}/`, { key: site.key })).json.data
        return a.status === 'ready' ? a : null
      })
    })()
    const seen = await pollEdge(restoring)
    const done = await restoring
    expect(done.error).toBeNull()
    expect(done.restored_at).not.toBeNull()
    await served('the restored page', kept, 10_000)
    const down = outage(seen)
    const logged = control.berth.output().split('\n').filter((l) => l.includes('archive restored') && l.includes(site.slug)).pop() ?? ''
    figures.restore = `not 200 for ${Math.round(down)} ms (${counts(seen)}); berth serve: ${/fetch_ms.*/.exec(logged)?.[0] ?? logged}`
    expect(seen.filter(([, s]) => s === 502), 'no 502 during a restore').toEqual([])
    // 4.2 to 5.7 s before its container was restarted on its node instead of through its service; 1.1 to 3.0 s since.
    expect(down).toBeLessThan(3_500)
  }, 300_000)

  it('moves to the control plane and back, the edge not serving it for under 3.5 s, the file written just before each move carried over', async () => {
    for (const to of ['control', b.id]) {
      const token = `before-move-to-${to}-${Date.now()}`
      await write(token)
      await served(`the page before the move to ${to}`, token)
      const move = control.cli(['sites', 'move', site.slug, '--to', to, '--json'], { allowFailure: true })
      const seen = await pollEdge(move)
      const moved = await move
      expect(moved.code, moved.stdout + moved.stderr).toBe(0)
      await served(`the page after the move to ${to}`, token, 10_000)
      figures[`move to ${to === 'control' ? 'control' : 'B'}`] = `did not serve for ${moved.json.unavailable_ms} ms as the move says, ${Math.round(outage(seen))} ms at the edge (${counts(seen)}); whole move ${moved.json.total_ms} ms`
      expect(seen.filter(([, s]) => s === 502), 'no 502 during a move').toEqual([])
      // 4.4 to 7.7 s before the old container was stopped on its node instead of through its service (Swarm's stop waits ~3 s); 1.3 to 2.7 s since.
      expect(outage(seen)).toBeLessThan(3_500)
    }
  }, 300_000)
})
