import { spawnSync } from 'bun'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { BINARY } from './helpers/binary'

/**
 * The cluster's admin commands from the compiled binary on a single box: what they refuse, with
 * which exit status and words. Their operations run in the two-node lab (test/lab) once the
 * cluster runtime is wired; the domain's tests (src/domain/cluster) cover what they do.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'berth-nodes-cli-'))
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

function berth(...args: string[]) {
  const p = spawnSync([BINARY, ...args, '--data-dir', dataDir], { env: { PATH: process.env.PATH! }, stdout: 'pipe', stderr: 'pipe' })
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() }
}

describe('berth nodes and berth sites move on a box without a cluster', () => {
  it.each([['nodes', 'list'], ['nodes', 'drain', 'node_x'], ['nodes', 'undrain', 'node_x'], ['nodes', 'resume', 'node_x'], ['nodes', 'remove', 'node_x'], ['nodes', 'evacuate', 'node_x'], ['sites', 'move', 'shop', '--to', 'node_x']])('berth %s %s exits 1 saying there is no cluster', (...args) => {
    const r = berth(...args)
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('cluster.enabled is false')
    expect(r.stdout).toBe('')
  })

  it('refuses a move without --to, and a second node, as usage errors (exit 2)', () => {
    const noTarget = berth('sites', 'move', 'shop')
    expect(noTarget.code).toBe(2)
    expect(noTarget.stderr).toContain('--to NODE')
    const two = berth('nodes', 'drain', 'node_x', 'node_y')
    expect(two.code).toBe(2)
    expect(two.stderr).toContain('one node id at a time')
  })
})
