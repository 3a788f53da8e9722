import { describe, expect, it } from 'vitest'
import { offsiteSetup } from '../../../test/helpers/offsite'
import type { OffsiteStep } from './copier'

/**
 * `berth offsite push` reports each copy as it is sent (OffsiteCopier.push's onStep; the admin
 * socket prints them as progress lines), on the real store, archive store, age keys and
 * FolderDestination of test/helpers/offsite.ts.
 */
describe('offsite push steps', () => {
  it('one step per archive copy once it is at the destination, then the store with its manifest; a failed copy is no step', async () => {
    const s = await offsiteSetup()
    const site = s.site()
    // The destination unreachable: the archives wait for their retry time, which push skips.
    s.fail('the bucket does not answer')
    const a = await s.archive(site.id, crypto.getRandomValues(new Uint8Array(200_000)))
    const b = await s.archive(site.id, crypto.getRandomValues(new Uint8Array(300_000)))
    await s.copier.idle()
    const failing: OffsiteStep[] = []
    const refused = await s.copier.push((step) => void failing.push(step))
    expect(refused.failures.length).toBeGreaterThan(0)
    expect(failing).toEqual([])

    s.fail(null)
    const steps: { step: OffsiteStep; there: string[] }[] = []
    const result = await s.copier.push((step) => void steps.push({ step, there: s.objects() }))
    expect(result.failures).toEqual([])
    // Copies let go (by retention) are deleted first, each a step too.
    for (const x of steps.filter((x) => x.step.step === 'copy_deleted')) expect(x.there).not.toContain((x.step as { key: string }).key)
    const made = steps.filter((x) => x.step.step !== 'copy_deleted')
    steps.splice(0, steps.length, ...made)
    expect(steps.map((x) => x.step.step), JSON.stringify(steps.map((x) => x.step))).toEqual(['copy_sent', 'copy_sent', 'store_copied'])
    const sent = steps.slice(0, 2).map((x) => x.step as Extract<OffsiteStep, { step: 'copy_sent' }>)
    expect(sent.map((x) => x.key).sort()).toEqual([a.key, b.key].sort())
    expect(sent.map((x) => x.bytes).sort()).toEqual([200_000, 300_000])
    // Each when it is there: the archive's object exists at its step, the store's only at the last.
    for (const x of steps.slice(0, 2)) expect(x.there).toContain((x.step as { key: string }).key)
    expect(steps[0]!.there.filter((k) => k.startsWith('store/'))).toEqual([])
    expect(steps[2]!.step).toEqual({ step: 'store_copied', manifest: result.manifest, ms: expect.any(Number) })
    expect(steps[2]!.there.filter((k) => k.startsWith('store/'))).toHaveLength(1)
  })
})
