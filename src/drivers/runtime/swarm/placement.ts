/** A node as placement weighs it. */
export interface NodeCapacity {
  id: string
  /** Only `active` nodes take new sites (draining, down and removed never). */
  state: string
  memoryBytes: number
  /** The memory limits of the site services pinned to it. */
  usedBytes: number
}

/**
 * The node for a new site of `memoryMb`: the active node with the most free memory (its memory
 * less the limits of the sites placed there) that fits it, not in `except`; null when none fits.
 * Ties go to the earlier node of the list (the control plane first).
 *
 * @example
 * chooseNode([{ id: 'control', state: 'active', memoryBytes: 4 * GiB, usedBytes: 3 * GiB }, { id: 'n1', state: 'active', memoryBytes: 2 * GiB, usedBytes: 0 }], 512) // 'n1'
 */
export function chooseNode(nodes: NodeCapacity[], memoryMb: number, except: string[] = []): string | null {
  const need = memoryMb * 1024 * 1024
  let best: { id: string; free: number } | null = null
  for (const node of nodes) {
    if (node.state !== 'active' || except.includes(node.id)) continue
    const free = node.memoryBytes - node.usedBytes
    if (free < need) continue
    if (!best || free > best.free) best = { id: node.id, free }
  }
  return best?.id ?? null
}
