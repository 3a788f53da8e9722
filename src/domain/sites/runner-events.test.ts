import { describe, expect, it } from 'vitest'
import type { ContainerRuntime } from '../../drivers/runtime/types'
import type { Logger } from '../../lib/logger'
import { SiteRunner } from './runner'

/** The runner as the engine's events move it (the healer hands them on): which container each site runs on. */
function runner() {
  return new SiteRunner({
    sites: { replaceSshPort: () => {} },
    plans: { get: () => { throw new Error('not asked') } },
    runtime: {} as ContainerRuntime,
    containers: { images: { shared: 'x', vps: 'x', dedicated: 'x' }, appImage: 'x', pidsLimit: 0 },
    log: {} as Logger,
    waitForAnswer: async () => {},
  })
}

describe('SiteRunner and the engine events of a site', () => {
  it('takes the die of a container already replaced for stale, even when its start came first (a move: two nodes, two event streams)', () => {
    const r = runner()
    // The new container on the target started and was reported before the old one's die.
    r.markStarted('shop', 'new')
    expect(r.markDown('shop', 'old')).toBe(false)
    // Not known down (null): the edge asks the engine, which finds the new container.
    expect(r.knownEndpoint('shop')).toBeUndefined()
    const before = r.version()
    // Its own die counts.
    expect(r.markDown('shop', 'new')).toBe(true)
    expect(r.knownEndpoint('shop')).toBeNull()
    expect(r.isDown('shop')).toBe(true)
    expect(r.version()).not.toBe(before)
    expect([...r.downSlugs()]).toEqual(['shop'])
  })

  it('takes any die for a site whose container it never saw', () => {
    const r = runner()
    expect(r.markDown('shop', 'any')).toBe(true)
    expect(r.knownEndpoint('shop')).toBeNull()
  })
})
