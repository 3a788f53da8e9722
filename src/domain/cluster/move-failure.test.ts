import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { clusterInProcess } from '../../../test/helpers/cluster-double'
import { DomainError } from '../errors'

/**
 * A move whose target does not take the site (issue 36: a box joined again whose engine kept its
 * former networks rejected every task, and the site stayed down while the API said active): the
 * site is put back on the node it served from, with its own files, and the move says so. On the
 * real services and archive jobs over the cluster runtime's test double; the lab runs it for real.
 */
let c: ReturnType<typeof clusterInProcess>
afterEach(async () => c && (await c.close()))

describe('a move whose target rejects the site', () => {
  it('puts the site back where it served, its files intact, and refuses with why (503 unavailable, exit 1)', async () => {
    c = clusterInProcess()
    const { slug } = await c.buy('mf')
    await c.runtime.write(slug, 'public/data.txt', 'written just before the move')
    c.runtime.rejecting.add('node_a')
    const err = await c.ops.mover.move(slug, 'node_a').then(() => null, (e: unknown) => e)
    expect(err).toBeInstanceOf(DomainError)
    expect(err).toMatchObject({ kind: 'unavailable' })
    expect((err as Error).message).toContain('rejected the task')
    expect((err as Error).message).toContain('put back on control')
    expect(await c.runtime.nodeOf(slug)).toBe('control')
    expect(c.h.services.runner.isUp(slug)).toBe(true)
    expect(readFileSync(join(c.runtime.homeOn('control', slug), 'public/data.txt'), 'utf8')).toBe('written just before the move')
    // The move's archive is ready again (not stuck restoring), with what went wrong.
    const archive = c.h.services.store.sqlite.query("SELECT status, error FROM archives WHERE kind = 'backup'").get() as { status: string; error: string }
    expect(archive.status).toBe('ready')
    expect(archive.error).toContain('restore failed')
  }, 30_000)

  it('removing a node takes its Swarm node off the manager too (a box joined again is a new Swarm node)', async () => {
    c = clusterInProcess()
    expect((await c.ops.nodes.remove('node_b')).state).toBe('removed')
    expect(c.runtime.swarmNodesRemoved).toEqual(['swarm-node_b'])
  })
})
