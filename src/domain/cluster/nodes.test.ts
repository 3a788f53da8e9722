import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateX25519Identity, identityToRecipient } from 'age-encryption'
import { afterEach, describe, expect, it } from 'vitest'
import { clusterInProcess } from '../../../test/helpers/cluster-double'
import { DomainError } from '../errors'

/**
 * The node operations (list, drain, remove, evacuate) on the real services, store, archive jobs
 * and GNU tar on real files, over a test double of the cluster runtime (test/helpers/cluster-double.ts)
 * until the Swarm runtime runs here; the two-node lab runs them on real engines.
 */
const GIB = 1024 ** 3
let c: ReturnType<typeof clusterInProcess>
afterEach(async () => c && (await c.close()))

const refusal = async (p: Promise<unknown>) => {
  const err = await p.then(() => null, (e: unknown) => e)
  expect(err).toBeInstanceOf(DomainError)
  return err as DomainError
}

describe('nodes list', () => {
  it('shows the control plane first, then each node with its state, capacity, used memory and sites', async () => {
    c = clusterInProcess()
    const one = await c.buy('la')
    const two = await c.buy('lb')
    const three = await c.buy('lc')
    await c.pin(two.slug, 'node_b')
    await c.pin(three.slug, 'node_b')
    const list = await c.ops.nodes.list()
    expect(list.map((n) => n.id)).toEqual(['control', 'node_a', 'node_b'])
    expect(list[0]).toMatchObject({ state: 'active', sites: [one.slug], used_memory_bytes: GIB, last_seen_at: null })
    expect(list[1]).toMatchObject({ name: 'box-a', address: '10.0.0.2', state: 'active', capacity: { memory_bytes: 8 * GIB, cpus: 2 }, used_memory_bytes: 0, sites: [] })
    expect(list[2]).toMatchObject({ state: 'active', sites: [two.slug, three.slug].sort(), used_memory_bytes: 2 * GIB })
  })
})

describe('nodes drain', () => {
  it('keeps placement off a drained node while its sites stay; refuses the control plane and unknown nodes', async () => {
    c = clusterInProcess()
    const site = await c.buy('dr')
    await c.pin(site.slug, 'node_a')
    // node_a has the most free memory: chosen until drained.
    expect(await c.runtime.choose(1024)).toBe('node_a')
    const drained = await c.ops.nodes.drain('node_a')
    expect(drained).toMatchObject({ state: 'draining', sites: [site.slug] })
    expect(await c.runtime.choose(1024)).toBe('control')
    expect(await c.runtime.nodeOf(site.slug)).toBe('node_a')
    expect((await c.ops.nodes.drain('node_a')).state).toBe('draining')
    expect(await refusal(c.ops.nodes.drain('control'))).toMatchObject({ kind: 'invalid', field: 'node' })
    expect(await refusal(c.ops.nodes.drain('node_zz'))).toMatchObject({ kind: 'not_found', field: 'node' })
  })
})

describe('nodes remove', () => {
  it('refuses a node that runs a site, saying to move or evacuate; removes an empty one for good', async () => {
    c = clusterInProcess()
    const site = await c.buy('rm')
    await c.pin(site.slug, 'node_b')
    const err = await refusal(c.ops.nodes.remove('node_b'))
    expect(err.kind).toBe('conflict')
    expect(err.message).toContain(site.slug)
    expect(err.message).toContain('berth sites move')
    expect(err.message).toContain('berth nodes evacuate node_b')
    expect(c.repo.find('node_b')!.state).toBe('active')

    await c.ops.mover.move(site.slug, 'control')
    const removed = await c.ops.nodes.remove('node_b')
    expect(removed).toMatchObject({ state: 'removed', sites: [], removed_at: new Date(c.h.clock.now()).toISOString() })
    expect(c.repo.find('node_b')).toMatchObject({ state: 'removed', removedAt: c.h.clock.now() })
    // A removed node takes no site, and removing it again changes nothing.
    expect(await refusal(c.ops.mover.move(site.slug, 'node_b'))).toMatchObject({ kind: 'invalid', field: 'to' })
    expect((await c.ops.nodes.remove('node_b')).state).toBe('removed')
    expect(await refusal(c.ops.nodes.remove('control'))).toMatchObject({ kind: 'invalid' })
  })
})

describe('nodes evacuate', () => {
  it("brings a down node's sites back elsewhere from their newest archive, says when the data is from, and which had none", async () => {
    c = clusterInProcess()
    const kept = await c.buy('ek')
    await c.pin(kept.slug, 'node_b')
    await c.runtime.write(kept.slug, 'public/data.txt', 'at the backup')
    // The daily backup, then a later change that only the lost node had.
    expect(c.h.services.archives.scheduleBackups()).toBe(1)
    await c.h.services.jobs.drain()
    const backup = c.h.services.store.sqlite.query("SELECT id, created_at AS createdAt FROM archives WHERE kind = 'backup' AND status = 'ready'").get() as { id: string; createdAt: number }
    c.h.clock.advance(3600_000)
    await c.runtime.write(kept.slug, 'public/data.txt', 'after the backup')
    const bare = await c.buy('eb')
    await c.pin(bare.slug, 'node_b')

    // A node that still answers is moved, not evacuated.
    expect(await refusal(c.ops.nodes.evacuate('node_b'))).toMatchObject({ kind: 'conflict', field: 'node' })
    c.repo.setState('node_b', ['active'], 'down')
    const result = await c.ops.nodes.evacuate('node_b')
    const lostMs = c.h.clock.now() - backup.createdAt

    const bySlug = new Map(result.sites.map((s) => [s.slug, s]))
    expect(bySlug.get(kept.slug)).toEqual({
      slug: kept.slug, node: 'node_a', archive: { id: backup.id, kind: 'backup', source: 'local' },
      data_from: new Date(backup.createdAt).toISOString(), lost_ms: lostMs, result: 'restored', problem: null,
    })
    expect(lostMs).toBe(3600_000)
    expect(bySlug.get(bare.slug)).toMatchObject({ node: expect.any(String), archive: null, data_from: null, result: 'empty' })
    expect(bySlug.get(bare.slug)!.problem).toContain('empty home')
    expect(readFileSync(join(c.runtime.homeOn('node_a', kept.slug), 'public/data.txt'), 'utf8')).toBe('at the backup')
    expect(readdirSync(c.runtime.homeOn(bySlug.get(bare.slug)!.node!, bare.slug))).toEqual([])
    // Both serve again, neither on the lost node, which takes nothing new.
    expect(await c.runtime.nodeOf(kept.slug)).toBe('node_a')
    expect(await c.runtime.nodeOf(bare.slug)).not.toBe('node_b')
    expect(c.h.services.runner.isUp(kept.slug) && c.h.services.runner.isUp(bare.slug)).toBe(true)
    expect(c.repo.find('node_b')!.state).toBe('draining')
    // The restore went through the archive's own path: ready again, with its restored_at.
    expect(c.h.services.store.sqlite.query('SELECT status, restored_at AS r FROM archives WHERE id = ?').get(backup.id)).toEqual({ status: 'ready', r: c.h.clock.now() })
    // Now empty, it can be removed.
    expect((await c.ops.nodes.remove('node_b')).state).toBe('removed')
  }, 30_000)

  it('takes an older archive when the newest one has no bytes anywhere, and --force evacuates an active node whose agent does not answer', async () => {
    c = clusterInProcess()
    const site = await c.buy('eo')
    await c.pin(site.slug, 'node_b')
    await c.runtime.write(site.slug, 'public/data.txt', 'old')
    c.h.services.archives.scheduleBackups()
    await c.h.services.jobs.drain()
    c.h.clock.advance(2 * 86_400_000)
    await c.runtime.write(site.slug, 'public/data.txt', 'newer')
    c.h.services.archives.scheduleBackups()
    await c.h.services.jobs.drain()
    const [newest, older] = c.h.services.store.sqlite.query("SELECT id, storage_key AS k FROM archives WHERE status = 'ready' ORDER BY created_at DESC").all() as { id: string; k: string }[]
    rmSync(join(c.h.services.config.archives.dir, newest!.k))
    expect(existsSync(join(c.h.services.config.archives.dir, older!.k))).toBe(true)

    c.answering.set('node_b', false)
    // Silent but not down yet (no berth serve saw it): only with --force.
    expect(await refusal(c.ops.nodes.evacuate('node_b'))).toMatchObject({ kind: 'conflict', field: 'node' })
    const result = await c.ops.nodes.evacuate('node_b', { force: true })
    expect(result.sites[0]).toMatchObject({ slug: site.slug, result: 'restored', archive: { id: older!.id }, lost_ms: 2 * 86_400_000 })
    expect(readFileSync(join(c.runtime.homeOn(result.sites[0]!.node!, site.slug), 'public/data.txt'), 'utf8')).toBe('old')
  }, 30_000)

  it('fetches an archive back from its copy off the box when the one on this box is missing, checked against its digest', async () => {
    const bucket = mkdtempSync(join(tmpdir(), 'berth-evacuate-offsite-'))
    const hoster = await generateX25519Identity()
    c = clusterInProcess({ env: { BERTH_OFFSITE_URL: `file://${bucket}`, BERTH_OFFSITE_AGE_RECIPIENTS: await identityToRecipient(hoster) } })
    try {
      const site = await c.buy('ef')
      await c.pin(site.slug, 'node_b')
      await c.runtime.write(site.slug, 'public/data.txt', 'kept off the box')
      c.h.services.archives.scheduleBackups()
      await c.h.services.jobs.drain()
      // Its copy off the box (queued when it turned ready).
      await c.h.services.offsite!.copier.runNow()
      const { id, k } = c.h.services.store.sqlite.query("SELECT id, storage_key AS k FROM archives WHERE status = 'ready'").get() as { id: string; k: string }
      expect(c.h.services.store.sqlite.query("SELECT status FROM offsite_copies WHERE archive_id = ?").get(id)).toEqual({ status: 'copied' })
      rmSync(join(c.h.services.config.archives.dir, k))
      c.repo.setState('node_b', ['active'], 'down')

      const result = await c.ops.nodes.evacuate('node_b')
      expect(result.sites[0]).toMatchObject({ slug: site.slug, result: 'restored', archive: { id, kind: 'backup', source: 'offsite' } })
      expect(readFileSync(join(c.runtime.homeOn(result.sites[0]!.node!, site.slug), 'public/data.txt'), 'utf8')).toBe('kept off the box')
      // Back in the local store, where the next restore finds it.
      expect(existsSync(join(c.h.services.config.archives.dir, k))).toBe(true)
    } finally {
      rmSync(bucket, { recursive: true, force: true })
    }
  }, 30_000)
})

describe('a drained node whose agent answers (issue 36)', () => {
  it('is never evacuated, with or without --force: evacuate says to move its sites, and changes nothing', async () => {
    c = clusterInProcess()
    const site = await c.buy('da')
    await c.pin(site.slug, 'node_b')
    await c.runtime.write(site.slug, 'public/data.txt', 'written just now')
    await c.ops.nodes.drain('node_b')
    for (const force of [false, true]) {
      const err = await refusal(c.ops.nodes.evacuate('node_b', { force }))
      expect(err).toMatchObject({ kind: 'conflict', field: 'node' })
      expect(err.message).toContain('berth nodes drain node_b --move')
    }
    // Even one the store has down a moment ago: its agent answers now.
    c.repo.setState('node_b', ['draining'], 'down')
    c.answering.set('node_b', true)
    expect(await refusal(c.ops.nodes.evacuate('node_b', { force: true }))).toMatchObject({ kind: 'conflict' })
    expect(await c.runtime.nodeOf(site.slug)).toBe('node_b')
    expect(readFileSync(join(c.runtime.homeOn('node_b', site.slug), 'public/data.txt'), 'utf8')).toBe('written just now')
    expect(c.h.services.store.sqlite.query("SELECT count(*) AS n FROM archives WHERE status = 'restoring' OR restored_at IS NOT NULL").get()).toEqual({ n: 0 })
  }, 30_000)

  it('whose agent is silent but whose box still answers is not evacuated without --force: its sites may still serve', async () => {
    c = clusterInProcess()
    const site = await c.buy('ds')
    await c.pin(site.slug, 'node_b')
    await c.runtime.write(site.slug, 'public/data.txt', 'written after the last backup')
    c.repo.setState('node_b', ['active'], 'down')
    c.engineHeard.set('node_b', true)
    const err = await refusal(c.ops.nodes.evacuate('node_b'))
    expect(err).toMatchObject({ kind: 'conflict', field: 'node' })
    expect(err.message).toContain('its box still answers')
    expect(err.message).toContain('--force')
    expect(await c.runtime.nodeOf(site.slug)).toBe('node_b')
    expect(c.repo.find('node_b')!.state).toBe('down')
    // The hoster who knows the box is lost all the same: --force brings the site back elsewhere.
    const forced = await c.ops.nodes.evacuate('node_b', { force: true })
    expect(forced.sites.map((s) => s.slug)).toEqual([site.slug])
    expect(await c.runtime.nodeOf(site.slug)).not.toBe('node_b')
  }, 30_000)

  it('is emptied by drain --move: each site moved with the file written just before, to an active node', async () => {
    c = clusterInProcess()
    const one = await c.buy('dm')
    const two = await c.buy('dn')
    for (const site of [one, two]) {
      await c.pin(site.slug, 'node_b')
      await c.runtime.write(site.slug, 'public/data.txt', `${site.slug} just before`)
    }
    const drained = await c.ops.nodes.drainAndMove('node_b')
    expect(drained).toMatchObject({ id: 'node_b', state: 'draining', sites: [] })
    expect(drained.moves.map((m) => [m.slug, m.result]).sort()).toEqual([[one.slug, 'moved'], [two.slug, 'moved']].sort())
    for (const m of drained.moves) {
      expect(m.to).not.toBe('node_b')
      expect(await c.runtime.nodeOf(m.slug)).toBe(m.to)
      expect(readFileSync(join(c.runtime.homeOn(m.to!, m.slug), 'public/data.txt'), 'utf8')).toBe(`${m.slug} just before`)
    }
    expect((await c.ops.nodes.remove('node_b')).state).toBe('removed')
  }, 30_000)

  it('is put back by undrain (no re-join): placement may choose it again; a down or removed node is refused', async () => {
    c = clusterInProcess()
    await c.ops.nodes.drain('node_a')
    expect(await c.runtime.choose(1024)).not.toBe('node_a')
    expect(await c.ops.nodes.undrain('node_a')).toMatchObject({ state: 'active' })
    expect(await c.runtime.choose(1024)).toBe('node_a')
    expect((await c.ops.nodes.undrain('node_a')).state).toBe('active')
    c.repo.setState('node_a', ['active'], 'down')
    expect(await refusal(c.ops.nodes.undrain('node_a'))).toMatchObject({ kind: 'conflict', field: 'node' })
    expect(await refusal(c.ops.nodes.undrain('control'))).toMatchObject({ kind: 'invalid', field: 'node' })
    expect(await refusal(c.ops.nodes.undrain('node_zz'))).toMatchObject({ kind: 'not_found', field: 'node' })
  })
})
