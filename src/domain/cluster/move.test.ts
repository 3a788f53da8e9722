import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { clusterInProcess } from '../../../test/helpers/cluster-double'
import { DomainError } from '../errors'

/**
 * `berth sites move` (SiteMover) on the real services, store, archive jobs and tar, over the
 * test double of the cluster runtime (test/helpers/cluster-double.ts): what it refuses, and the
 * order of a move (archive before the switch, the old volume removed once the new one serves).
 */
let c: ReturnType<typeof clusterInProcess>
afterEach(async () => c && (await c.close()))

const refusal = async (p: Promise<unknown>) => {
  const err = await p.then(() => null, (e: unknown) => e)
  expect(err).toBeInstanceOf(DomainError)
  return err as DomainError
}

describe('sites move', () => {
  it('refuses an unknown site (404), the node it is on (409), and a target that is unknown, draining, down or removed (422)', async () => {
    c = clusterInProcess()
    const { slug } = await c.buy('mr')
    expect(await refusal(c.ops.mover.move('no-such-site', 'node_a'))).toMatchObject({ kind: 'not_found', field: 'slug' })
    expect(await refusal(c.ops.mover.move(slug, 'control'))).toMatchObject({ kind: 'conflict', field: 'to' })
    expect(await refusal(c.ops.mover.move(slug, 'node_zz'))).toMatchObject({ kind: 'invalid', field: 'to' })
    c.repo.setState('node_a', ['active'], 'draining')
    c.repo.setState('node_b', ['active'], 'down')
    const draining = await refusal(c.ops.mover.move(slug, 'node_a'))
    expect(draining).toMatchObject({ kind: 'invalid', field: 'to' })
    expect(draining.message).toContain('draining')
    expect((await refusal(c.ops.mover.move(slug, 'node_b'))).message).toContain('does not answer')
    c.repo.setState('node_b', ['down'], 'removed', c.h.clock.now())
    expect(await refusal(c.ops.mover.move(slug, 'node_b'))).toMatchObject({ kind: 'invalid', field: 'to' })
    // Nothing was touched by a refusal.
    expect(c.runtime.order.filter((o) => !o.startsWith('ensureSite') && !o.startsWith('prepareSite'))).toEqual([])
    expect(await c.runtime.nodeOf(slug)).toBe('control')
  })

  it('keeps its restore under way for berth serve from the claim on: an upkeep pass in the middle of the switch neither settles it nor skips the restore', async () => {
    c = clusterInProcess()
    const { slug, siteId } = await c.buy('mu')
    await c.runtime.write(slug, 'public/page.html', 'kept through upkeep')
    let seen: string | undefined
    c.runtime.onPlaceOn = async () => {
      // berth serve's upkeep pass, run in the middle of the switch: archives whose work has no
      // running job are settled as stranded, and the site's restore would be skipped.
      await c.h.services.archives.maintain()
      seen = c.h.services.store.sqlite.query("SELECT status FROM archives WHERE site_id = ? AND status = 'restoring'").get(siteId) ? 'restoring' : 'settled'
    }
    await c.ops.mover.move(slug, 'node_a')
    expect(seen).toBe('restoring')
    expect(readFileSync(join(c.runtime.homeOn('node_a', slug), 'public/page.html'), 'utf8')).toBe('kept through upkeep')
  })

  it('takes an archive, switches, restores it on the target, then removes the old volume, and says how long the site did not serve', async () => {
    c = clusterInProcess()
    const { slug, siteId } = await c.buy('mv')
    await c.runtime.write(slug, 'public/page.html', 'moved with me')
    c.runtime.order = []
    // While its files go back on the target, the edge answers its own page, never the empty home.
    const upWhileRestoring: boolean[] = []
    c.runtime.onPause = (s) => void (c.runtime.pins.get(s) === 'node_a' && upWhileRestoring.push(c.h.services.runner.isUp(s)))
    const moved = await c.ops.mover.move(slug, 'node_a')
    expect(upWhileRestoring).toEqual([false])

    expect(moved).toMatchObject({ slug, from: 'control', to: 'node_a' })
    expect(moved.unavailable_ms).toBeGreaterThanOrEqual(0)
    expect(moved.unavailable_ms).toBeLessThanOrEqual(moved.total_ms)
    const order = c.runtime.order
    const at = (step: string) => {
      const i = order.indexOf(step)
      expect(i, `${step} in ${order.join(', ')}`).toBeGreaterThanOrEqual(0)
      return i
    }
    // The archive is taken on the old node (frozen) before the switch; on the target only the
    // site's volume is made, its files go back (frozen: nothing runs yet), and then it runs, once;
    // the old volume goes once the new one serves.
    const ensures = order.flatMap((o, i) => (o === `ensureSite ${slug}@node_a` ? [i] : []))
    expect(ensures.length).toBe(1)
    // The site's image is put on the target first, while the site serves (an app site's is 632 MB).
    const carried = order.findIndex((o) => o.startsWith('carryImage ') && o.endsWith('@node_a'))
    expect(carried, order.join(', ')).toBeGreaterThanOrEqual(0)
    expect(carried).toBeLessThan(at(`pause ${slug}@control`))
    expect(at(`pause ${slug}@control`)).toBeLessThan(at(`placeOn ${slug}@node_a`))
    expect(at(`placeOn ${slug}@node_a`)).toBeLessThan(at(`prepareSite ${slug}@node_a`))
    expect(at(`prepareSite ${slug}@node_a`)).toBeLessThan(at(`pause ${slug}@node_a`))
    expect(at(`pause ${slug}@node_a`)).toBeLessThan(ensures[0]!)
    expect(ensures[0]!).toBeLessThan(at(`removeVolumeOn ${slug}@control`))
    expect(order.filter((o) => o.startsWith('ensureSite')).every((o) => o === `ensureSite ${slug}@node_a`)).toBe(true)

    expect(readFileSync(join(c.runtime.homeOn('node_a', slug), 'public/page.html'), 'utf8')).toBe('moved with me')
    expect(existsSync(c.runtime.homeOn('control', slug))).toBe(false)
    expect(await c.runtime.nodeOf(slug)).toBe('node_a')
    expect(c.h.services.runner.isUp(slug)).toBe(true)
    // The archive is a backup of the site, ready again after its restore; no snapshot slot is taken.
    const archive = c.h.services.store.sqlite.query('SELECT kind, status, site_id AS s, restored_at AS r FROM archives WHERE id = ?').get(moved.archive.id)
    expect(archive).toEqual({ kind: 'backup', status: 'ready', s: siteId, r: c.h.clock.now() })
    expect((await c.ops.nodes.list()).find((n) => n.id === 'node_a')!.sites).toEqual([slug])

    // And back.
    const back = await c.ops.mover.move(slug, 'control')
    expect(back).toMatchObject({ from: 'node_a', to: 'control' })
    expect(readFileSync(join(c.runtime.homeOn('control', slug), 'public/page.html'), 'utf8')).toBe('moved with me')
    expect(existsSync(c.runtime.homeOn('node_a', slug))).toBe(false)
  }, 30_000)

  it('keeps the site on its old node, files and all, when the archive cannot be made', async () => {
    c = clusterInProcess()
    const { slug } = await c.buy('mf')
    c.runtime.onPause = () => {
      throw new Error('the engine would not freeze it')
    }
    const err = await refusal(c.ops.mover.move(slug, 'node_a'))
    expect(err.kind).toBe('unavailable')
    expect(err.message).toContain('nothing was moved')
    expect(c.runtime.order.some((o) => o.startsWith('placeOn'))).toBe(false)
    expect(await c.runtime.nodeOf(slug)).toBe('control')
    expect(existsSync(c.runtime.homeOn('control', slug))).toBe(true)
  }, 30_000)

  it('moves nothing when the site\'s image cannot be put on the target: 503 saying so, the site serving where it was', async () => {
    c = clusterInProcess()
    const { slug } = await c.buy('mi')
    c.runtime.order = []
    c.runtime.onCarry = () => {
      throw new Error('the node\'s engine did not answer')
    }
    const err = await refusal(c.ops.mover.move(slug, 'node_a'))
    expect(err.kind).toBe('unavailable')
    expect(err.message).toMatch(/image could not be put on node_a \(the node's engine did not answer\); nothing was moved/)
    expect(c.runtime.order.some((o) => o.startsWith('pause') || o.startsWith('placeOn'))).toBe(false)
    expect(await c.runtime.nodeOf(slug)).toBe('control')
    expect(c.h.services.runner.isUp(slug)).toBe(true)
  }, 30_000)
})
