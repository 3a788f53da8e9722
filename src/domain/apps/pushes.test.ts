import { describe, expect, it } from 'vitest'
import { memoryLogger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import { AppPushes, type PushEvent } from './pushes'
import type { DeploySource } from './ports'

/**
 * AppPushes on its own: what it does with the events a supervisor's watch sends (the end-to-end
 * path, over real SSH and git, is test/apps-push.e2e.test.ts).
 */
const site = { id: 'site_1', slug: 'shop', status: 'active', runtime: 'node', planSlug: 'business' } as SiteRow

function pushes() {
  let emit: (e: PushEvent) => void = () => {}
  const deployed: DeploySource[] = []
  const refused: string[] = []
  const p = new AppPushes({
    sites: { listLive: () => [site], find: (id) => (id === site.id ? site : undefined) },
    hasSsh: () => true,
    watch: (_slug, onPush) => {
      emit = onPush
      return { close() {} }
    },
    deploy: (_site, source) => deployed.push(source),
    refuse: async (_slug, id, message) => void refused.push(`${id}: ${message}`),
    useAppImage: async (s) => s,
    unfinished: () => null,
    log: memoryLogger(),
  })
  p.keep()
  return { emit: (e: PushEvent) => emit(e), deployed, refused }
}

const push = (id: string, ref = 'refs/heads/main'): PushEvent => ({ event: 'push', id, ref, commit: 'a'.repeat(40), dir: `/home/site/app/incoming/${id}` })

describe('a push event', () => {
  it('deploys once, even when the supervisor replays it to a watch opened again before push-done', () => {
    const { emit, deployed } = pushes()
    emit(push('psh_0123456789abcdef'))
    emit(push('psh_0123456789abcdef'))
    expect(deployed).toEqual([{ kind: 'push', ref: 'main', commit: 'a'.repeat(40), dir: '/home/site/app/incoming/psh_0123456789abcdef', push_id: 'psh_0123456789abcdef' }])
  })

  it('to a branch other than main or master is refused with the command that pushes it as main', async () => {
    const { emit, deployed, refused } = pushes()
    emit(push('psh_aaaaaaaaaaaaaaaa', 'refs/heads/feature/x'))
    emit(push('psh_bbbbbbbbbbbbbbbb', 'refs/heads/master'))
    await Bun.sleep(0)
    expect(deployed.map((d) => d.kind === 'push' && d.ref)).toEqual(['master'])
    expect(refused).toEqual(['psh_aaaaaaaaaaaaaaaa: Not deployed: Berth deploys pushes to main or master, and this push was to feature/x. Push it as main: git push berth feature/x:main'])
  })

  it('with a branch name git allows and Berth does not read (an @, a non-ASCII letter) still gets its answer, so the pusher does not wait', async () => {
    const { emit, deployed, refused } = pushes()
    emit(push('psh_cccccccccccccccc', 'refs/heads/fix@höme'))
    await Bun.sleep(0)
    expect(deployed).toEqual([])
    expect(refused).toEqual(['psh_cccccccccccccccc: Not deployed: Berth deploys pushes to main or master, and this push was to fix@h?me. Push it as main: git push berth fix@h?me:main'])
  })
})
