import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api } from './helpers/binary'
import { viaEdge } from './helpers/purchase'
import { adminKillKit, type AdminKillKit } from './lab/admin-kill'
import { waitFor, type Lab } from './lab/cluster-lab'
import { labWithSite, stopLabWithFigures, type ControlPlane, type JoinedNode } from './lab/berth-cluster'

/**
 * An evacuation during which `berth serve` is killed -9 (issue 37): the evacuation runs in berth
 * serve (its command is a client of the admin socket), so killing the server in the middle of the
 * site's restore on the control plane leaves the work to its next start, which finishes it: the
 * site served once (one running container, on the node the store names), its page and its 40 MB
 * intact (by digest), never shown `active` while the edge does not serve it, and `berth nodes list`
 * saying where it is. On a two-node lab of its own (test/lab; docs/testing.md): it loses node B,
 * which admin-socket-kill.e2e.test.ts's evacuation also does, and one lab loses a node once.
 */
// BERTH_EVACKILL_LAB_NAME runs a second copy beside another worktree's (lab names are exclusive on a machine).
const LAB_NAME = process.env.BERTH_EVACKILL_LAB_NAME ?? 'evakil'
let lab: Lab
let control: ControlPlane
let b: JoinedNode
let site: { slug: string; key: string }
let kit: AdminKillKit
const figures: Record<string, string> = {}

beforeAll(async () => {
  ({ lab, control, b, site } = await labWithSite(LAB_NAME, { image: 'berth/static:1', sku: 'svc_starter_monthly', slugPrefix: 'ek', activeWithinMs: 120_000 }))
  kit = adminKillKit(lab, control, site)
}, 300_000)

afterAll(async () => {
  expect(await stopLabWithFigures(LAB_NAME, { lab, control }, 'admin socket evacuation kill e2e', figures)).toEqual([])
}, 60_000)

type Node = { id: string; state: string; sites: string[] }
async function nodes(): Promise<Node[]> {
  const { json } = await control.cli(['nodes', 'list', '--json'], { allowFailure: true })
  return (json?.nodes ?? json ?? []) as Node[]
}

/**
 * Polls the API's status of the site and the edge's answer side by side until stopped; the
 * samples in which the API said `active` while the edge did not serve (a 200), which must be none.
 * While berth serve is down neither answers: no sample.
 */
function watchActiveVsServed(): { stop(): Promise<string[]>; samples(): number } {
  const lies: string[] = []
  let samples = 0
  let running = true
  const loop = (async () => {
    while (running) {
      try {
        const status = (await api(control.url, 'GET', `/sites/${site.slug}/`, { key: site.key })).json?.data?.status as string | undefined
        const edge = (await viaEdge(control.url, site.slug)).status
        const again = (await api(control.url, 'GET', `/sites/${site.slug}/`, { key: site.key })).json?.data?.status as string | undefined
        samples++
        // Active before and after the edge's answer: the edge answered while the API said active.
        if (status === 'active' && again === 'active' && edge !== 200) lies.push(`active while the edge answered ${edge}`)
      } catch {
        // berth serve is down (killed, restarting): nothing answers, nothing to compare
      }
      await Bun.sleep(100)
    }
  })()
  return {
    samples: () => samples,
    async stop() {
      running = false
      await loop
      return lies
    },
  }
}

describe('an evacuation berth serve does for its command', () => {
  it('an evacuation during which berth serve is killed -9 in its restore is finished at its next start: served once from the control plane, files intact, never active unserved', async () => {
    const move = async (to: string) => {
      const moved = await control.cli(['sites', 'move', site.slug, '--to', to], { allowFailure: true, timeoutMs: 180_000 })
      expect(moved.code, moved.stdout + moved.stderr).toBe(0)
    }
    if ((await kit.nodeOf(site.slug)) !== 'control') await move('control')
    const token = await kit.ballast('evacuated-serve-killed')
    // The move's archive holds the page and the ballast: what the evacuation restores.
    await move(b.id)
    await lab.powerOff('B')
    kit.lost.add('B')
    await waitFor('B down', 30_000, async () => (await nodes()).find((n) => n.id === b.id)?.state === 'down')
    const watch = watchActiveVsServed()
    const before = new Set((await kit.backups()).filter((x) => x.status === 'restoring').map((x) => x.id))
    const evacuate = lab.spawn('A', [control.binary, 'nodes', 'evacuate', b.id, '--json', '--config', control.configPath])
    // Caught with its volume made on A and its archive restoring into it.
    const archive = await waitFor('the evacuation restoring on the control plane', 90_000, async () => {
      const restoring = (await kit.backups()).find((x) => !before.has(x.id) && x.status === 'restoring')
      return restoring && (await lab.docker('A', 'volume', 'ls', '-q', '--filter', `label=dev.berth.site-slug=${site.slug}`)) !== '' && restoring
    })
    await control.berth.kill9()
    const killed = performance.now()
    // The command loses its server: it ends, saying so (exit 1), and changes nothing itself.
    await evacuate.proc.exited
    expect(evacuate.proc.exitCode, evacuate.output()).toBe(1)
    await control.berth.restart()
    const restarted = performance.now()
    expect(control.berth.output()).toContain('resuming jobs interrupted by a stop')
    const done = await waitFor('the restarted berth serve to finish the restore', 120_000, async () => (await kit.backups()).find((x) => x.id === archive.id && x.status !== 'restoring'))
    expect([done.status, done.restored_at !== null], JSON.stringify(done)).toEqual(['ready', true])
    const took = await kit.servedOnceFrom('control', token, 90_000, restarted)
    const down = restarted - killed
    // Served, and said so: active, the API and the edge agreeing all along.
    expect((await api(control.url, 'GET', `/sites/${site.slug}/`, { key: site.key })).json.data.status).toBe('active')
    await Bun.sleep(2_000)
    expect(watch.samples()).toBeGreaterThan(10)
    expect(await watch.stop()).toEqual([])
    // berth nodes list: the site on the control plane only; B left draining, empty (removable).
    const listed = await nodes()
    expect(listed.filter((n) => n.sites.includes(site.slug)).map((n) => n.id)).toEqual(['control'])
    expect(listed.find((n) => n.id === b.id), JSON.stringify(listed)).toMatchObject({ state: 'draining', sites: [] })
    figures['evacuation, berth serve killed'] = `served from the control plane ${took.toFixed(0)} ms after the restart, ${(took + down).toFixed(0)} ms after the kill (restart included)`
  }, 360_000)
})
