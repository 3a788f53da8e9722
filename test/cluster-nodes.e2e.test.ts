import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api } from './helpers/binary'
import { buyDirect, viaEdge, waitForSite } from './helpers/purchase'
import { startLab, waitFor, type Lab, type LabProcess } from './lab/cluster-lab'
import { leftovers } from './lab/lab-host'
import { AGENT_PORT, startControlPlane, type ControlPlane } from './lab/berth-cluster'

/**
 * A node's life beside its sites (issue 36 item 8), on the two-node lab (test/lab) with the
 * compiled binary: a node is `joining` until its agent first answers and takes no site before;
 * its public address (given at the join, changed with `berth nodes set`) is the host of its
 * sites' SSH view; a stopped or crashed agent leaves its sites serving through the kernel
 * forwards; the repair pass names the node and its agent when the agent does not answer; and the
 * access log of a site on the node while its agent is away is written once it is back.
 */
// Its own lab name, so that it runs beside test/cluster.e2e.test.ts and other worktrees' runs.
const LAB_NAME = process.env.BERTH_CLNODES_LAB_NAME ?? 'clnodes'
const PUBLIC = '203.0.113.7'
let lab: Lab
let control: ControlPlane
let agent: LabProcess
let nodeId = ''
let dataDir = ''
const figures: Record<string, string> = {}

interface Bought { slug: string; key: string }

beforeAll(async () => {
  lab = await startLab(LAB_NAME)
  // A repair pass every 3 s: what it says of a node whose agent is away shows within the test.
  control = await startControlPlane(lab, { env: { BERTH_CONTAINERS_RECONCILE_SECONDS: '3' } })
}, 120_000)

afterAll(async () => {
  await agent?.kill().catch(() => {})
  await control?.berth.stop().catch(() => {})
  await lab?.stop()
  console.log(`cluster-nodes e2e: ${Object.entries(figures).map(([k, v]) => `${k}: ${v}`).join('; ')}`)
  expect(leftovers(LAB_NAME)).toEqual([])
}, 60_000)

async function buy(stem: string, sku = 'svc_starter_monthly'): Promise<Bought> {
  const slug = `${stem}${Math.random().toString(36).slice(2, 6)}`
  const key = (await buyDirect(control.url, { slug, sku })).data.api_key as string
  expect(await waitForSite(control.url, key, slug, 120_000)).toBe('active')
  return { slug, key }
}

async function nodes(): Promise<{ id: string; state: string; public_address: string | null; address: string; sites: string[] }[]> {
  const { json } = await control.cli(['nodes', 'list', '--json'])
  return json
}

const serveAgent = () => lab.spawn('B', [control.binary, 'node', 'serve', '--data', dataDir])

async function startAgent(): Promise<void> {
  agent = serveAgent()
  await waitFor('B active again', 20_000, async () => (await nodes()).find((n) => n.id === nodeId)?.state === 'active')
}

/** Asks the site through the edge every 200 ms for `ms`; the statuses that were not 200, and how many were asked. */
async function watchServing(site: Bought, ms: number, tag: string): Promise<{ asked: number; failed: number[] }> {
  const failed: number[] = []
  let asked = 0
  const until = Date.now() + ms
  while (Date.now() < until) {
    const { status } = await viaEdge(control.url, site.slug, `/?${tag}=${asked}`)
    asked++
    if (status !== 200) failed.push(status)
    await Bun.sleep(200)
  }
  return { asked, failed }
}

describe("a node's life beside its sites", () => {
  let first: Bought
  let onB: Bought

  it('is joining after berth node join, keeps its public address, and takes no site until its agent answers', async () => {
    const { token, url, fingerprint } = await control.joinCommand()
    dataDir = join(lab.root, 'b', 'berth-node')
    const joined = await lab.exec('B', [control.binary, 'node', 'join', url, '--token', token, '--fingerprint', fingerprint, '--address', lab.address('B'), '--public-address', PUBLIC,
      '--port', String(AGENT_PORT), '--name', 'lab-b', '--docker-socket', lab.dockerSocket('B'), '--data', dataDir, '--no-systemd', '--json'])
    nodeId = JSON.parse(joined.stdout).node_id
    expect(nodeId).toMatch(/^node_/)
    // No agent yet: the health monitor has asked it and had no answer; joining, not active, not down.
    await Bun.sleep(3_000)
    expect((await nodes()).find((n) => n.id === nodeId)).toMatchObject({ state: 'joining', public_address: PUBLIC, address: lab.address('B') })
    const table = await control.cli(['nodes', 'list'])
    expect(table.stdout).toMatch(/PUBLIC ADDRESS/)
    expect(table.stdout).toMatch(new RegExp(`${nodeId}\\s+lab-b\\s+${lab.address('B').replaceAll('.', '\\.')}\\s+${PUBLIC.replaceAll('.', '\\.')}\\s+joining`))
    first = await buy('first')
    expect((await nodes()).find((n) => n.sites.includes(first.slug))!.id).toBe('control')
    const move = await control.cli(['sites', 'move', first.slug, '--to', nodeId], { allowFailure: true })
    expect(move.code, move.stderr).toBe(2)
    expect(move.stderr).toContain(`Node ${nodeId} is joining`)

    const started = performance.now()
    await startAgent()
    figures['joining to active'] = `${(performance.now() - started).toFixed(0)} ms after the agent's start`
    onB = await buy('onb')
    expect((await nodes()).find((n) => n.sites.includes(onB.slug))!.id).toBe(nodeId)
  }, 240_000)

  it("gives the node's public address in the SSH view of its sites, and says so when it has none", async () => {
    const vps = await buy('ssh', 'svc_business_monthly')
    if ((await nodes()).find((n) => n.sites.includes(vps.slug))!.id !== nodeId) {
      const moved = await control.cli(['sites', 'move', vps.slug, '--to', nodeId], { timeoutMs: 180_000, allowFailure: true })
      expect(moved.code, moved.stderr).toBe(0)
    }
    const view = await api(control.url, 'GET', `/sites/${vps.slug}/ssh/`, { key: vps.key })
    expect(view.status, view.text).toBe(200)
    expect(view.json.data).toMatchObject({ host: PUBLIC, warning: null })
    expect(view.json.data.command).toContain(`site@${PUBLIC}`)

    const unset = await control.cli(['nodes', 'set', nodeId, '--public-address', 'none'])
    expect(unset.code, unset.stderr).toBe(0)
    const without = await api(control.url, 'GET', `/sites/${vps.slug}/ssh/`, { key: vps.key })
    expect(without.json.data.host).toBe(lab.address('B'))
    expect(without.json.data.warning).toContain('has no public address set')
    const bad = await control.cli(['nodes', 'set', nodeId, '--public-address', 'ssh://box-b'], { allowFailure: true })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('IP address or a host name')
    expect((await control.cli(['nodes', 'set', nodeId, '--public-address', 'box-b.example.net'])).code).toBe(0)
    expect((await api(control.url, 'GET', `/sites/${vps.slug}/ssh/`, { key: vps.key })).json.data).toMatchObject({ host: 'box-b.example.net', warning: null })
  }, 300_000)

  it("keeps serving a node's site while its agent is stopped, names the agent in the repair pass, and writes the access log once it is back", async () => {
    expect((await viaEdge(control.url, onB.slug, '/')).status).toBe(200)
    await agent.kill('SIGTERM')
    const stopped = await watchServing(onB, 12_000, 'stopped')
    figures['agent stopped'] = `${stopped.asked - stopped.failed.length}/${stopped.asked} answered 200 over 12 s`
    expect((await nodes()).find((n) => n.id === nodeId)!.state).toBe('down')
    expect(stopped.failed).toEqual([])
    const view = await api(control.url, 'GET', `/sites/${onB.slug}/`, { key: onB.key })
    expect(view.json.data.status).toBe('active')
    expect(control.berth.output()).toContain('still serves, through the node\'s kernel forward')

    // The repair pass's error is the node's agent, with what to do, never this box's engine.
    const said = await waitFor('the repair pass reporting the node', 20_000, async () => control.berth.output().split('\n').find((l) => l.includes('reconcile could not repair every site') && l.includes(onB.slug)))
    expect(said).toContain(`(${nodeId},`)
    expect(said).toContain('berth-node')
    expect(said).not.toContain('systemctl start docker')

    const back = performance.now()
    await startAgent()
    // The lines of the requests served while the agent was away reach the site's log.
    const logged = await waitFor('the access log lines of the outage', 30_000, async () => {
      const res = await api(control.url, 'GET', `/sites/${onB.slug}/logs/?type=access&lines=200&search=stopped%3D`, { key: onB.key })
      const lines = (res.json?.data?.lines ?? []) as string[]
      return lines.length >= stopped.asked ? lines : null
    })
    figures['outage log'] = `${logged.length} lines written ${(performance.now() - back).toFixed(0)} ms after the agent's restart`
    expect(logged.some((l) => l.includes('GET /?stopped=0 '))).toBe(true)
    expect((await viaEdge(control.url, onB.slug, '/')).status).toBe(200)
  }, 240_000)

  it('keeps serving it when the agent is killed (SIGKILL), and after its restart', async () => {
    await agent.kill('SIGKILL')
    const killed = await watchServing(onB, 10_000, 'killed')
    figures['agent killed'] = `${killed.asked - killed.failed.length}/${killed.asked} answered 200 over 10 s`
    expect((await nodes()).find((n) => n.id === nodeId)!.state).toBe('down')
    expect(killed.failed).toEqual([])
    await startAgent()
    const after = await watchServing(onB, 4_000, 'after')
    expect(after.failed).toEqual([])
  }, 120_000)
})
