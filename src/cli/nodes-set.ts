import { COMMON_OPTIONS, STORE_OPTIONS, UsageError, type Command } from './command'
import { onlyArgument } from './admin'
import { CLUSTER_NOTE, withNodeOps } from './nodes'
import type { NodeView } from '../domain/cluster'

/**
 * `berth nodes set NODE --public-address HOST`: what the hoster says of a node after its join
 * (domain/cluster/nodes.ts setPublicAddress). The public address is the host the SSH view of
 * the node's sites gives (their SSH ports are published on the node, not on the control plane).
 */
export const nodesSetCommand: Command = {
  path: ['nodes', 'set'],
  summary: "Set a node's public address: the host its sites' SSH view gives.",
  usage: 'berth nodes set NODE --public-address HOST|none [--json] [--data-dir DIR] [--config FILE]',
  description: [
    'HOST is where the internet reaches the node (an IP address or a host name, no scheme or port):',
    'GET /sites/{slug}/ssh/ of each site on it gives HOST as the host to connect to, since the sites\'',
    'SSH ports are published on the node itself. Without one the view gives the node\'s private',
    'address and a warning that it is reachable from the private network only. none forgets it.',
    'berth node join --public-address gives it at the join; berth nodes list shows it.',
    '',
    CLUSTER_NOTE,
    '',
    'Exit status: 0; 2 for an unknown NODE, the control plane (its host is ssh.host in berth.toml),',
    'or a HOST that is not an IP address or a host name.',
  ].join('\n'),
  options: {
    'public-address': { type: 'string', value: 'HOST', help: 'Where the internet reaches the node; none forgets it (required).' },
    ...STORE_OPTIONS,
    ...COMMON_OPTIONS,
  },
  examples: ['berth nodes set node_7f3k2q --public-address 203.0.113.7', 'berth nodes set node_7f3k2q --public-address box-b.example.net'],
  run(ctx) {
    const id = onlyArgument(ctx, 'node id', 'berth nodes set NODE --public-address HOST')
    const given = ctx.values['public-address']
    if (typeof given !== 'string' || given === '') throw new UsageError('--public-address HOST is required (none forgets the one set)')
    const value = given === 'none' ? null : given
    return withNodeOps(ctx, 'nodes/set', { id, public_address: value }, (node: NodeView) => {
      ctx.out.result(node, () => value === null
        ? `${id} has no public address now: its sites' SSH view gives its private address (${node.address}) with a warning.`
        : `${id}'s public address is ${value}: its sites' SSH view gives it as their host.`)
      return 0
    })
  },
}
