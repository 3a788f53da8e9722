import { describe, expect, it } from 'vitest'
import { chooseNode, type NodeCapacity } from './placement'

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
