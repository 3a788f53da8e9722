import { describe, expect, it } from 'vitest'
import { chooseNode, nodeCapacities, type NodeCapacity } from './placement'
import type { ClusterNode } from '../../cluster/types'

const GiB = 1024 ** 3
const node = (id: string, memoryGb: number, usedGb: number, state = 'active'): NodeCapacity => ({ id, state, memoryBytes: memoryGb * GiB, usedBytes: usedGb * GiB })

describe('chooseNode', () => {
  it('picks the active node with the most free memory', () => {
    expect(chooseNode([node('control', 8, 6), node('a', 4, 1), node('b', 16, 14)], 512)).toBe('a')
  })

  it('never picks a draining, down or removed node, however free', () => {
    expect(chooseNode([node('control', 4, 3), node('d', 64, 0, 'draining'), node('x', 64, 0, 'down'), node('r', 64, 0, 'removed')], 512)).toBe('control')
  })

  it('skips nodes where the plan does not fit, and those excepted', () => {
    expect(chooseNode([node('control', 4, 3.8), node('a', 4, 3)], 1024)).toBe('a')
    expect(chooseNode([node('control', 4, 3.8), node('a', 4, 3)], 1024, ['a'])).toBeNull()
  })

  it('gives a tie to the earlier node', () => {
    expect(chooseNode([node('control', 4, 2), node('a', 4, 2)], 256)).toBe('control')
  })
})

describe('a node\'s memory as placement counts it', () => {
  const stored = (id: string, memoryGb: number, swarmNodeId: string | null): ClusterNode => ({
    id, name: id, address: '10.0.0.2', agentPort: 7710, swarmNodeId, certFingerprint: 'f', certSerial: 's', state: 'active', memoryBytes: memoryGb * GiB, cpus: 2, joinedAt: 0, lastSeenAt: null,
  })

  it('is the smaller of what the node reported and what its engine told the Swarm: a claim of 1 TiB pulls no site', () => {
    const liar = stored('liar', 1024, 'swarm-liar')
    const honest = stored('honest', 8, 'swarm-honest')
    const engine = new Map([['swarm-liar', 2 * GiB], ['swarm-honest', 8 * GiB]])
    const capacities = nodeCapacities(4 * GiB, [liar, honest], [], engine)
    expect(capacities.map((c) => [c.id, c.memoryBytes / GiB])).toEqual([['control', 4], ['liar', 2], ['honest', 8]])
    expect(chooseNode(capacities, 512)).toBe('honest')
    // Without the engine's figures (as before), the claim won.
    expect(chooseNode(nodeCapacities(4 * GiB, [liar, honest], []), 512)).toBe('liar')
  })

  it('is none for a node the Swarm does not know', () => {
    const capacities = nodeCapacities(4 * GiB, [stored('ghost', 64, 'swarm-gone'), stored('new', 64, null)], [], new Map())
    expect(capacities.slice(1).map((c) => c.memoryBytes)).toEqual([0, 0])
    expect(chooseNode(capacities, 512)).toBe('control')
  })
})
