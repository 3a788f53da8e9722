import { afterEach, describe, expect, it } from 'vitest'
import { clusterInProcess } from '../../../test/helpers/cluster-double'

/**
 * The reconcile pass and a node that keeps failing a site (issue 36, item 2: "the repair pass does
 * not retry the same failing node forever"), on the real services and SQLite store over the
 * cluster runtime's double: tried again after 30 s, 1 min, 2 min ...; from the third failure in a
 * row the site's view says so (status recovering, error with when it is tried next); a start that
 * succeeds clears it.
 */
let c: ReturnType<typeof clusterInProcess>
afterEach(async () => c && (await c.close()))

const SECOND = 1000

describe('the reconcile pass on a node that keeps failing a site', () => {
  it('backs off (30 s, 1 min, 2 min), says so in the view after 3 failures, and forgets it once the site starts', async () => {
    c = clusterInProcess()
    const { slug, key } = await c.buy('rb')
    await c.pin(slug, 'node_a')
    const view = async () => (await c.h.call('GET', `/api/v1/sites/${slug}/`, { key })).json.data
    const tries = () => c.runtime.order.filter((o) => o === `ensureSite ${slug}@node_a`).length
    const pass = async (after: number) => {
      c.h.clock.advance(after)
      await c.h.services.reconciler.reconcile()
      return tries()
    }
    // Its container died and node_a now rejects every task of it (moby#37087's kept network).
    c.runtime.rejecting.add('node_a')
    c.h.services.runner.markDown(slug)
    c.runtime.order = []
    expect(await pass(0)).toBe(1)
    expect(await pass(10 * SECOND)).toBe(1)
    expect(await pass(21 * SECOND)).toBe(2)
    expect(await pass(30 * SECOND)).toBe(2)
    expect(await pass(29 * SECOND)).toBe(2)
    expect((await view()).error).not.toContain('could not start it')
    expect(await pass(1 * SECOND)).toBe(3)
    const failing = await view()
    expect(failing.status).toBe('recovering')
    expect(failing.error).toContain('Berth could not start it on its server 3 times since')
    expect(failing.error).toContain('it tries again at')
    // Every pass of the next 2 minutes leaves it be.
    for (let i = 0; i < 3; i++) expect(await pass(30 * SECOND)).toBe(3)
    c.runtime.rejecting.delete('node_a')
    expect(await pass(31 * SECOND)).toBe(4)
    expect(await view()).toMatchObject({ status: 'active', error: null })
    // Forgotten: a new failure starts again at 30 s.
    c.runtime.rejecting.add('node_a')
    c.h.services.runner.markDown(slug)
    expect(await pass(30 * SECOND)).toBe(5)
    expect(await pass(31 * SECOND)).toBe(6)
  }, 30_000)
})
