import { afterEach, describe, expect, it } from 'vitest'
import { clusterInProcess } from '../../../test/helpers/cluster-double'

/**
 * A move marks its site before the old container stops (issue 36, items 2 and 8): berth serve's
 * edge answers the site's "being brought back" page (503) instead of trying a container about to
 * stop (a 502), and its view says `recovering` with why, until it answers on its target. On the
 * real services and store over the cluster runtime's double; the lab's test/cluster-incidents.e2e
 * polls a real edge during real moves.
 */
let c: ReturnType<typeof clusterInProcess>
afterEach(async () => c && (await c.close()))

describe('a site being moved', () => {
  it('is answered 503 by the edge and shown recovering with why from before its old container stops until it serves on its target', async () => {
    c = clusterInProcess()
    const { slug, key } = await c.buy('mk')
    const view = async () => (await c.h.call('GET', `/api/v1/sites/${slug}/`, { key })).json.data
    expect(await c.h.services.directory.resolve(slug)).toMatchObject({ state: 'serving' })
    let atStop: { edge: string | undefined; status: string; error: string | null } | null = null
    // The old container stops at placeOn: by then the edge must have stopped sending it requests.
    c.runtime.onPlaceOn = async () => {
      const v = await view()
      atStop = { edge: (await c.h.services.directory.resolve(slug))?.state, status: v.status, error: v.error }
    }
    const moved = await c.ops.mover.move(slug, 'node_a')
    expect(atStop).toMatchObject({ edge: 'recovering', status: 'recovering' })
    expect(atStop!.error).toContain('moving it to another server')
    // Once the move returns, the edge serves it and its view is active again, with no error.
    expect(await c.h.services.directory.resolve(slug)).toMatchObject({ state: 'serving' })
    expect(await view()).toMatchObject({ status: 'active', error: null })
    expect(moved.edge_serves).toBe(true)
    const mark = c.h.services.store.sqlite.query("SELECT status FROM jobs WHERE kind = 'move_site'").all()
    expect(mark).toEqual([{ status: 'succeeded' }])
  }, 30_000)

  it('shows recovering with why while its container is known down, active again once it runs', async () => {
    c = clusterInProcess()
    const { slug, key } = await c.buy('md')
    const view = async () => (await c.h.call('GET', `/api/v1/sites/${slug}/`, { key })).json.data
    c.h.services.runner.markDown(slug)
    expect(await c.h.services.directory.resolve(slug)).toMatchObject({ state: 'recovering' })
    const down = await view()
    expect(down.status).toBe('recovering')
    expect(down.error).toContain('being started again')
    await c.h.services.reconciler.reconcile()
    expect(await view()).toMatchObject({ status: 'active', error: null })
  }, 30_000)
})
