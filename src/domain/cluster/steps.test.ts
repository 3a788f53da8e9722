import { afterEach, describe, expect, it } from 'vitest'
import { clusterInProcess } from '../../../test/helpers/cluster-double'
import type { NodeStep } from './steps'

/**
 * The steps a long node operation reports as they happen (domain/cluster/steps.ts), on the real
 * services, store, archive jobs and tar over the cluster runtime's test double: each in order,
 * each when its work is done (the engine's own order, c.runtime.order, is read at every step),
 * and a step that fails ends in the refusal with no step after it.
 */
let c: ReturnType<typeof clusterInProcess>
afterEach(async () => c && (await c.close()))

/** Collects the steps, each with what the engine had done when it came. */
function recorder() {
  const steps: { step: NodeStep; engine: string[] }[] = []
  return { steps, onStep: (step: NodeStep) => void steps.push({ step, engine: [...c.runtime.order] }), kinds: () => steps.map((s) => `${s.step.step}${'slug' in s.step ? ` ${s.step.slug}` : ''}`) }
}

describe('the steps of a move', () => {
  it('come in order, each once its work is done, with the archive\'s size and the time the site did not serve', async () => {
    c = clusterInProcess()
    const { slug } = await c.buy('ps')
    await c.runtime.write(slug, 'public/page.html', 'x'.repeat(50_000))
    c.runtime.order = []
    const r = recorder()
    const moved = await c.ops.mover.move(slug, 'node_a', r.onStep)
    expect(r.kinds()).toEqual(['backup_taken', 'stopped', 'volume_made', 'files_restored', 'started', 'serving', 'old_volume_removed'].map((k) => `${k} ${slug}`))
    const [backup, stopped, volume, restored, started, serving, removed] = r.steps
    expect(backup!.step).toMatchObject({ archive: moved.archive.id, bytes: expect.any(Number) })
    expect((backup!.step as { bytes: number }).bytes).toBeGreaterThan(0)
    // Each when the engine did it, not before.
    expect(backup!.engine).not.toContain(`placeOn ${slug}@node_a`)
    expect(stopped!.step).toEqual({ step: 'stopped', slug, from: 'control', to: 'node_a' })
    expect(stopped!.engine).toContain(`placeOn ${slug}@node_a`)
    expect(stopped!.engine).not.toContain(`prepareSite ${slug}@node_a`)
    expect(volume!.engine).toContain(`prepareSite ${slug}@node_a`)
    expect(volume!.engine).not.toContain(`ensureSite ${slug}@node_a`)
    expect(restored!.step).toMatchObject({ node: 'node_a', bytes: (backup!.step as { bytes: number }).bytes, ms: expect.any(Number) })
    expect(started!.engine).toContain(`ensureSite ${slug}@node_a`)
    expect(serving!.step).toEqual({ step: 'serving', slug, node: 'node_a', outage_ms: moved.unavailable_ms, edge_serves: moved.edge_serves })
    expect(serving!.engine).not.toContain(`removeVolumeOn ${slug}@control`)
    expect(removed!.step).toEqual({ step: 'old_volume_removed', slug, node: 'control', removed: true })
    // Back, to a control plane that lacks the site's image: it is carried first, before the backup (its own step).
    c.runtime.lackingImages.add('control')
    c.runtime.order = []
    const back = recorder()
    await c.ops.mover.move(slug, 'control', back.onStep)
    expect(back.kinds().slice(0, 2)).toEqual([`image_carried ${slug}`, `backup_taken ${slug}`])
    expect(back.steps[0]!.step).toMatchObject({ node: 'control', image: expect.stringMatching(/^berth\//), ms: expect.any(Number) })
    expect(back.steps[0]!.engine.some((o) => o.startsWith('pause'))).toBe(false)
  }, 30_000)

  it('stop at the step that failed: an archive that cannot be made reports nothing, a target that does not take the site reports the switch and no start', async () => {
    c = clusterInProcess()
    const { slug } = await c.buy('pf')
    c.runtime.onPause = () => {
      throw new Error('the engine would not freeze it')
    }
    const none = recorder()
    await expect(c.ops.mover.move(slug, 'node_a', none.onStep)).rejects.toMatchObject({ kind: 'unavailable' })
    expect(none.steps).toEqual([])

    c.runtime.onPause = undefined
    c.runtime.rejecting.add('node_a')
    const some = recorder()
    await expect(c.ops.mover.move(slug, 'node_a', some.onStep)).rejects.toMatchObject({ kind: 'unavailable' })
    expect(some.kinds()).toEqual(['backup_taken', 'stopped', 'volume_made'].map((k) => `${k} ${slug}`))
    expect(await c.runtime.nodeOf(slug)).toBe('control')
  }, 30_000)
})

describe('the steps of a drain --move and of an evacuation', () => {
  it('a drain names each site\'s move before its steps', async () => {
    c = clusterInProcess()
    const { slug } = await c.buy('pd')
    await c.pin(slug, 'node_a')
    const r = recorder()
    const drained = await c.ops.nodes.drainAndMove('node_a', r.onStep)
    expect(drained.moves).toMatchObject([{ slug, result: 'moved' }])
    const to = drained.moves[0]!.to!
    expect(r.steps[0]!.step).toEqual({ step: 'moving', slug, to })
    expect(r.kinds().slice(1)).toEqual(['backup_taken', 'stopped', 'volume_made', 'files_restored', 'started', 'serving', 'old_volume_removed'].map((k) => `${k} ${slug}`))
  }, 30_000)

  it('an evacuation says where each site comes back from before its restore, and its outcome after', async () => {
    c = clusterInProcess()
    const kept = await c.buy('pk')
    await c.pin(kept.slug, 'node_b')
    await c.runtime.write(kept.slug, 'public/data.txt', 'at the backup')
    expect(c.h.services.archives.scheduleBackups()).toBe(1)
    await c.h.services.jobs.drain()
    c.repo.setState('node_b', ['active'], 'down')
    const r = recorder()
    const result = await c.ops.nodes.evacuate('node_b', { onStep: r.onStep })
    const site = result.sites[0]!
    expect(r.kinds()).toEqual(['evacuating', 'stopped', 'volume_made', 'files_restored', 'started', 'evacuated'].map((k) => `${k} ${kept.slug}`))
    expect(r.steps[0]!.step).toEqual({ step: 'evacuating', slug: kept.slug, to: site.node, archive: site.archive!.id, data_from: site.data_from })
    expect(r.steps[0]!.engine).not.toContain(`placeOn ${kept.slug}@${site.node}`)
    expect(r.steps.at(-1)!.step).toEqual({ step: 'evacuated', slug: kept.slug, node: site.node, result: 'restored', problem: null })
  }, 30_000)
})
