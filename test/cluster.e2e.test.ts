import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api } from './helpers/binary'
import { buyDirect, viaEdge, waitForSite } from './helpers/purchase'
import { startLab, type Lab } from './lab/cluster-lab'
import { leftovers } from './lab/lab-host'
import { joinNode, startControlPlane, type ControlPlane, type JoinedNode } from './lab/berth-cluster'

/**
 * Sites across two nodes (issue 28), on the two-node lab (test/lab): the compiled control plane
 * runs in node A with cluster.enabled, node B joins with `berth node join` and runs the agent.
 * Every site feature is used on a site that runs on B, through the control plane's API and edge
 * only, as an agent would; moving a site both ways, losing B and evacuating it end it.
 */
let lab: Lab
let control: ControlPlane
let b: JoinedNode
const figures: Record<string, string> = {}

interface Bought { slug: string; key: string }
const sites: Record<'first' | 'onB', Bought> = {} as never

beforeAll(async () => {
  lab = await startLab('cluster')
  control = await startControlPlane(lab)
  b = await joinNode(lab, control, 'B')
  figures.join = `token to agent answering ${b.joinMs.toFixed(0)} ms`
}, 120_000)

afterAll(async () => {
  await control?.berth.stop().catch(() => {})
  await lab?.stop()
  console.log(`cluster e2e: ${Object.entries(figures).map(([k, v]) => `${k}: ${v}`).join('; ')}`)
  expect(leftovers('cluster')).toEqual([])
}, 60_000)

/** Polls `probe` every 50 ms until it answers a truthy value; throws after `ms`. */
async function waitFor<T>(what: string, ms: number, probe: () => Promise<T | undefined | null | '' | false>): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await probe().catch(() => undefined)
    if (value) return value
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`)
    await Bun.sleep(50)
  }
}

async function buy(stem: string, sku = 'svc_starter_monthly'): Promise<Bought> {
  const slug = `${stem}${Math.random().toString(36).slice(2, 6)}`
  const key = (await buyDirect(control.url, { slug, sku })).data.api_key as string
  expect(await waitForSite(control.url, key, slug, 120_000)).toBe('active')
  return { slug, key }
}

/** Which node runs each site, as `berth nodes list --json` says. */
async function nodeOf(slug: string): Promise<string | undefined> {
  const { json } = await control.cli(['nodes', 'list', '--json'])
  return (json.nodes ?? json).find((n: { sites: string[] }) => n.sites.includes(slug))?.id
}

async function write(site: Bought, path: string, content: string) {
  const res = await api(control.url, 'POST', `/sites/${site.slug}/files/write/`, { key: site.key, body: { path, content } })
  expect(res.status, res.text).toBeLessThan(300)
}

describe('a cluster of two nodes', () => {
  it('lists the joined node as active beside the control plane', async () => {
    const { json, code } = await control.cli(['nodes', 'list', '--json'])
    expect(code).toBe(0)
    const nodes = json.nodes ?? json
    expect(nodes.map((n: { id: string }) => n.id)).toEqual(['control', b.id])
    expect(nodes[1]).toMatchObject({ state: 'active', address: lab.address('B') })
  })

  it('places a new site on the node with the most free memory: the second site goes to B', async () => {
    sites.first = await buy('first')
    expect(await nodeOf(sites.first.slug)).toBe('control')
    sites.onB = await buy('onb')
    expect(await nodeOf(sites.onB.slug)).toBe(b.id)
  }, 180_000)

  it('writes and reads files of the site on B, and its edge serves them', async () => {
    const token = `on-b-${Date.now()}`
    await write(sites.onB, 'public/index.html', token)
    const read = await api(control.url, 'GET', `/sites/${sites.onB.slug}/files/read/?path=public/index.html`, { key: sites.onB.key })
    expect(read.status, read.text).toBe(200)
    expect(read.json.data.content).toBe(token)
    const served = await viaEdge(control.url, sites.onB.slug)
    expect(served.status).toBe(200)
    expect(served.text).toBe(token)
    // A hostile path gets the same answer as on one box.
    const escape = await api(control.url, 'GET', `/sites/${sites.onB.slug}/files/read/?path=../../etc/passwd`, { key: sites.onB.key })
    expect(escape.status).toBe(422)
    expect(escape.json.error.param).toBe('path')
  })
})
