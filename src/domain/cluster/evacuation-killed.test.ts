import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { clusterInProcess } from '../../../test/helpers/cluster-double'

/**
 * An evacuation whose berth serve is killed -9 between the restore's claim (the archive turned
 * `restoring`) and the switch to the target (placeOn): at the next start the restore runs again
 * (JobRunner.start requeues what was left running), and must bring the site up on a node that
 * takes sites, never on the lost node it was leaving (issue 37, part I). On the real services,
 * store, archive jobs and GNU tar over the cluster runtime's double; the kill is the work stopped
 * for good at placeOn (its promise never settles, as a dead process's), the restart the runner's
 * start over the rows it left. test/admin-socket-evac-kill.e2e kills a real berth serve.
 */
let c: ReturnType<typeof clusterInProcess>
afterEach(async () => c && (await c.close()))

/** A site on node_b with a backup holding `public/data.txt`; node_b then lost (its agent, box and engine silent). */
async function siteOnLostNode(stem: string) {
  c = clusterInProcess()
  const site = await c.buy(stem)
  await c.pin(site.slug, 'node_b')
  await c.runtime.write(site.slug, 'public/data.txt', 'at the backup')
  expect(c.h.services.archives.scheduleBackups()).toBe(1)
  await c.h.services.jobs.drain()
  c.runtime.rejecting.add('node_b')
  c.answering.set('node_b', false)
  c.repo.setState('node_b', ['active'], 'down')
  return site
}

/** Runs the jobs until none is due, moving the clock past each retry's delay. */
async function settle() {
  for (let i = 0; i < 4; i++) {
    await c.h.services.jobs.drain()
    c.h.clock.advance(60_000)
  }
  await c.h.services.jobs.drain()
}

describe('an evacuation killed between the restore\'s claim and the switch', () => {
  it('is finished by the next start of berth serve: the site serves on another node with its files', async () => {
    const site = await siteOnLostNode('ek')
    let killed = false
    c.runtime.onPlaceOn = () => {
      if (killed) return
      killed = true
      return new Promise<void>(() => {})
    }
    void c.ops.nodes.evacuate('node_b')
    for (let i = 0; i < 200 && !killed; i++) await Bun.sleep(10)
    expect(killed).toBe(true)
    expect(c.h.services.store.sqlite.query("SELECT status FROM archives WHERE kind = 'backup'").get()).toEqual({ status: 'restoring' })
    expect(await c.runtime.nodeOf(site.slug)).toBe('node_b')

    // The restart: what the dead process left running is queued again and run.
    c.h.services.jobs.start()
    await settle()

    expect(await c.runtime.nodeOf(site.slug)).toBe('node_a')
    expect(c.h.services.runner.isUp(site.slug)).toBe(true)
    expect(readFileSync(join(c.runtime.homeOn('node_a', site.slug), 'public/data.txt'), 'utf8')).toBe('at the backup')
    const view = (await c.h.call('GET', `/api/v1/sites/${site.slug}/`, { key: site.key })).json.data
    expect(view).toMatchObject({ status: 'active', error: null })
    expect(c.h.services.store.sqlite.query("SELECT status, error FROM archives WHERE kind = 'backup'").get()).toEqual({ status: 'ready', error: null })
    expect(c.h.services.store.sqlite.query("SELECT count(*) AS n FROM jobs WHERE status IN ('queued', 'running', 'failed')").get()).toEqual({ n: 0 })
  }, 30_000)
})

describe('a second evacuation of a lost node left draining', () => {
  it('proceeds without --force when its agent and its box are silent, and says what to do when its box still answers', async () => {
    const site = await siteOnLostNode('e2')
    // A first evacuation left it draining (as one killed in the middle does) with the site still on it.
    c.repo.setState('node_b', ['down'], 'draining')
    c.engineHeard.set('node_b', true)
    const refused = await c.ops.nodes.evacuate('node_b').then(() => null, (e: Error) => e)
    expect(refused?.message).toContain('box still answers')
    c.engineHeard.set('node_b', false)
    const result = await c.ops.nodes.evacuate('node_b')
    expect(result.sites).toMatchObject([{ slug: site.slug, node: 'node_a', result: 'restored', problem: null }])
    expect(await c.runtime.nodeOf(site.slug)).toBe('node_a')
    expect(readFileSync(join(c.runtime.homeOn('node_a', site.slug), 'public/data.txt'), 'utf8')).toBe('at the backup')
    expect(c.repo.find('node_b')!.state).toBe('draining')
  }, 30_000)
})
