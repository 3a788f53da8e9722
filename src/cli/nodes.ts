import { buildNodeOpsAdmin, NoClusterError, type NodeOps } from '../compose/cluster-ops'
import type { EvacuationView, NodeView } from '../domain/cluster/views'
import { createLogger } from '../lib/logger'
import { COMMON_OPTIONS, STORE_OPTIONS, UsageError, type Command, type CommandContext } from './command'
import { onlyArgument, refusalsAsExit, shortTime, table } from './admin'
import { configFrom } from './config-flags'

/**
 * `berth nodes ...` (and, through withNodeOps, `berth sites move` in sites.ts): the hoster's operations on the nodes of a cluster
 * (domain/cluster; docs/cluster.md). They run in this command's own process, over the same
 * composition as `berth serve` (the cluster runtime: the Swarm manager and the nodes' agents),
 * with nothing started; `berth serve` may run beside and sees their writes to the store within a
 * quarter of a second. Each subcommand is a Command of path ['nodes', name]; NODE_OPS_COMMANDS
 * lists this file's (`berth nodes token` is the join's, beside them).
 */

export const CLUSTER_NOTE = [
  'Runs on the control plane (the box with berth.db), in this process, over the Swarm manager and',
  "the nodes' agents as berth serve reaches them; berth serve may be running (it sees the change",
  'within a quarter of a second). On a box without cluster.enabled it exits 1.',
].join('\n')

/** Runs `fn` over the node operations; a refusal is printed as `berth: message` with its exit status. */
export async function withNodeOps(ctx: CommandContext, fn: (ops: NodeOps) => Promise<number>): Promise<number> {
  const config = configFrom(ctx)
  let ops: NodeOps & { close(): Promise<void> }
  try {
    ops = buildNodeOpsAdmin(config, createLogger('warn', (line) => process.stderr.write(line + '\n')))
  } catch (err) {
    if (!(err instanceof NoClusterError)) throw err
    ctx.out.error(err.message)
    return 1
  }
  return refusalsAsExit(ctx, () => fn(ops), () => ops.close())
}

export const nodesListCommand: Command = {
  path: ['nodes', 'list'],
  summary: 'List the nodes of the cluster (the control plane first): state, address, memory, sites.',
  usage: 'berth nodes list [--json] [--data-dir DIR] [--config FILE]',
  description: [
    'One line per node: its id (control for the control plane itself), name, private address,',
    'public address (the host its sites\' SSH view gives: berth nodes set; ssh.host for the control',
    'plane), state (joining: its agent has not answered yet, no site goes there; active; draining:',
    'no new site goes there; down: its agent has not answered for 6 s;',
    'removed: its certificate is refused), the memory its sites plans take of its memory, its',
    'processors, when its agent last answered, and its sites. --json prints every field.',
    '',
    CLUSTER_NOTE,
  ].join('\n'),
  options: { ...STORE_OPTIONS, ...COMMON_OPTIONS },
  examples: ['berth nodes list', 'berth nodes list --json | jq -r \'.[] | select(.state == "down") | .id\''],
  run(ctx) {
    if (ctx.positionals.length > 0) throw new UsageError(`berth nodes list takes no argument (got ${ctx.positionals.join(' ')})`)
    return withNodeOps(ctx, async ({ nodes }) => {
      const list = await nodes.list()
      ctx.out.result(list, () => nodesTable(list))
      return 0
    })
  },
}

export const nodesDrainCommand: Command = {
  path: ['nodes', 'drain'],
  summary: 'Drain a node: no new site is placed there; the sites it runs stay until moved.',
  usage: 'berth nodes drain NODE [--json] [--data-dir DIR] [--config FILE]',
  description: [
    'Marks the node draining: placement never chooses it again for a new site or a move, and an',
    'evacuation leaves it out. The sites it runs keep serving; move them one by one with berth sites',
    'move SLUG --to NODE, then berth nodes remove NODE. Draining a draining node changes nothing.',
    '',
    CLUSTER_NOTE,
    '',
    'Exit status: 0; 1 for a removed node; 2 for an unknown NODE or the control plane.',
  ].join('\n'),
  options: { ...STORE_OPTIONS, ...COMMON_OPTIONS },
  examples: ['berth nodes drain node_7f3k2q'],
  run(ctx) {
    const id = onlyArgument(ctx, 'node id', 'berth nodes drain NODE')
    return withNodeOps(ctx, async ({ nodes }) => {
      const node = await nodes.drain(id)
      ctx.out.result(node, () => `Drained ${id}: no new site goes there. It still runs ${node.sites.length} site(s)${node.sites.length ? ` (${node.sites.join(', ')}); move each with berth sites move SLUG --to NODE` : `; berth nodes remove ${id} takes it out`}.`)
      return 0
    })
  },
}

export const nodesRemoveCommand: Command = {
  path: ['nodes', 'remove'],
  summary: "Remove a node that runs no site: its certificate is refused from then on.",
  usage: 'berth nodes remove NODE [--json] [--data-dir DIR] [--config FILE]',
  description: [
    'Takes a node out of the cluster for good: its state becomes removed and the control plane',
    'refuses its certificate from then on (a node that comes back needs a new join, with a new',
    'token). Refused while the node runs a site: move them (berth sites move SLUG --to NODE) or,',
    'for a lost node, evacuate it (berth nodes evacuate NODE) first. Removing a removed node',
    'changes nothing. Leave the Swarm on the node itself (docker swarm leave) and stop',
    'berth-node.service there, if the box still exists.',
    '',
    CLUSTER_NOTE,
    '',
    'Exit status: 0; 1 when the node still runs sites; 2 for an unknown NODE or the control plane.',
  ].join('\n'),
  options: { ...STORE_OPTIONS, ...COMMON_OPTIONS },
  examples: ['berth nodes remove node_7f3k2q'],
  run(ctx) {
    const id = onlyArgument(ctx, 'node id', 'berth nodes remove NODE')
    return withNodeOps(ctx, async ({ nodes }) => {
      const node = await nodes.remove(id)
      ctx.out.result(node, () => `Removed ${id}: its certificate is refused from now on.`)
      return 0
    })
  },
}

export const nodesEvacuateCommand: Command = {
  path: ['nodes', 'evacuate'],
  summary: "Bring a lost node's sites back on the other nodes from their latest archive; says each one's data time.",
  usage: 'berth nodes evacuate NODE [--force] [--json] [--data-dir DIR] [--config FILE]',
  description: [
    'For a node that is lost (state down): each of its sites is placed on another active node',
    '(the one with the most free memory that fits its plan), its files put back from its newest',
    'archive (backup or snapshot; the copy off the box when the one on this box is missing and',
    'offsite.url is set), and started there. The command prints, per site, the time its data is',
    'from (what it wrote since is lost with the node), or that it had no archive and now serves',
    'an empty home. The node is left draining: nothing is placed there again; berth nodes remove',
    'NODE takes it out once empty.',
    '',
    'A node that is still active (its agent answers) is refused: berth sites move carries every',
    'change over, an evacuation only what the last archive holds. --force evacuates it anyway',
    '(when berth serve is not running to see it down).',
    '',
    CLUSTER_NOTE,
    '',
    'Exit status: 0 when every site is back (with or without data); 1 when one could not be',
    'brought back, or the node is active (without --force) or removed; 2 for an unknown NODE.',
  ].join('\n'),
  options: {
    force: { type: 'boolean', help: 'Evacuate a node even though it shows active.' },
    ...STORE_OPTIONS,
    ...COMMON_OPTIONS,
  },
  examples: ['berth nodes evacuate node_7f3k2q', 'berth nodes evacuate node_7f3k2q --json'],
  run(ctx) {
    const id = onlyArgument(ctx, 'node id', 'berth nodes evacuate NODE [--force]')
    return withNodeOps(ctx, async ({ nodes }) => {
      const result = await nodes.evacuate(id, { force: ctx.values.force === true })
      ctx.out.result(result, () => evacuationText(result))
      return result.sites.some((s) => s.result === 'failed') ? 1 : 0
    })
  },
}

/** This file's commands, for cli/index.ts. */
export const NODE_OPS_COMMANDS: Command[] = [nodesListCommand, nodesDrainCommand, nodesRemoveCommand, nodesEvacuateCommand]

const GIB = 1024 ** 3

function nodesTable(list: NodeView[]): string {
  return table(
    ['NODE', 'NAME', 'ADDRESS', 'PUBLIC ADDRESS', 'STATE', 'MEMORY USED', 'CPUS', 'LAST SEEN', 'SITES'],
    list.map((n) => [
      n.id, n.name, n.address || '-', n.public_address ?? '-', n.state,
      `${(n.used_memory_bytes / GIB).toFixed(1)}/${(n.capacity.memory_bytes / GIB).toFixed(1)} GiB`,
      String(n.capacity.cpus), n.id === 'control' ? '-' : shortTime(n.last_seen_at),
      n.sites.length ? n.sites.join(',') : '-',
    ]),
  )
}

function evacuationText(r: EvacuationView): string {
  if (r.sites.length === 0) return `Node ${r.node} ran no site; it is draining now (berth nodes remove ${r.node} takes it out).`
  const lines = r.sites.map((s) => {
    if (s.result === 'restored') return `  ${s.slug}: on ${s.node}, data from ${s.data_from} (${s.archive!.kind}${s.archive!.source === 'offsite' ? ', from the copy off the box' : ''})`
    if (s.result === 'empty') return `  ${s.slug}: on ${s.node}, WITHOUT DATA: it had no archive; it serves an empty home`
    return `  ${s.slug}: NOT BACK: ${s.problem}`
  })
  return [`Evacuated ${r.node} (left draining; berth nodes remove ${r.node} once you are done with it):`, ...lines].join('\n')
}
