import type { AdminOp } from '../admin/protocol'
import type { DrainView, EvacuationView, NodeView } from '../domain/cluster'
import { COMMON_OPTIONS, STORE_OPTIONS, UsageError, type Command, type CommandContext } from './command'
import { onlyArgument, shortTime, table, viaServer } from './admin'
import { configFrom } from './config-flags'

/**
 * `berth nodes ...` (and, through withNodeOps, `berth sites move` in sites.ts): the hoster's operations on the nodes of a cluster
 * (domain/cluster; docs/cluster.md). Each is a client of berth serve's admin socket: berth serve
 * runs the operation (over the Swarm manager and the nodes' agents) and answers. Each subcommand is a Command of path ['nodes', name]; NODE_OPS_COMMANDS
 * lists this file's (`berth nodes token` is the join's, beside them).
 */

export const CLUSTER_NOTE = [
  'Runs on the control plane (the box with berth.db) as root: berth serve does it (over the Swarm',
  "manager and the nodes' agents), asked on its admin socket DATA_DIR/admin.sock; with no berth",
  'serve running it exits 1 saying how to start it (berth nodes list then reads the store itself).',
  'A long operation prints its progress as it goes; killing this command does not stop it (berth',
  'serve finishes it). On a box without cluster.enabled it exits 1.',
].join('\n')

/** A move's step lines as the command prints them (admin/steps.ts), for the help of the commands that move sites. */
export const MOVE_STEPS_EXAMPLE = [
  '  shop: image berth/app:1 carried to node_7f3k2q (14.2 s), the site serving meanwhile',
  '  shop: backup taken (archive 6f1c..., 12.4 MiB, 0.9 s)',
  '  shop: stopped on control, pinned to node_7f3k2q; the edge answers its "being brought back" page',
  '  shop: volume made on node_7f3k2q',
  '  shop: files restored on node_7f3k2q (12.4 MiB, 1.4 s)',
  '  shop: started on node_7f3k2q, answering there',
  '  shop: serving from node_7f3k2q (did not serve for 1.4 s)',
  '  shop: old volume removed from control',
]

/** How the steps print, for the same helps. */
export const STEPS_NOTE = [
  'Each step prints as berth serve does it, one line with its figures (with --json: as {"progress":',
  'LINE, "step": {...}} lines on stderr, stdout holding only the result; docs/cluster.md, "What a',
  'move prints").',
].join('\n')

/**
 * Runs a node operation through berth serve's admin socket (cli/admin.ts viaServer). On a box
 * without cluster.enabled it exits 1 first, saying so, whether or not berth serve runs.
 */
export async function withNodeOps<T>(ctx: CommandContext, op: AdminOp, input: Record<string, unknown>, print: (result: T) => number): Promise<number> {
  if (!configFrom(ctx).cluster.enabled) {
    ctx.out.error('this box runs no cluster (cluster.enabled is false); see docs/cluster.md, "Turning it on"')
    return 1
  }
  return viaServer<T>(ctx, op, input, print)
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
    return withNodeOps(ctx, 'nodes/list', {}, (list: NodeView[]) => {
      ctx.out.result(list, () => nodesTable(list))
      return 0
    })
  },
}

export const nodesDrainCommand: Command = {
  path: ['nodes', 'drain'],
  summary: 'Drain a node: no new site is placed there; with --move its sites are moved off, files and all.',
  usage: 'berth nodes drain NODE [--move] [--json] [--data-dir DIR] [--config FILE]',
  description: [
    'Marks the node draining: placement never chooses it again for a new site or a move, and an',
    'evacuation leaves it out. The sites it runs keep serving. Draining a draining node changes nothing;',
    'berth nodes undrain NODE (or resume) puts it back.',
    '',
    '--move then empties it the way berth sites move does, site by site: a fresh archive, the switch,',
    'its files put back on the active node with the most free memory that fits its plan. Nothing is',
    'lost but what a site writes in the seconds between its archive and the stop. This is how to take',
    'a node whose agent answers out of the cluster (berth nodes evacuate refuses it: an evacuation',
    'restores the last archives and loses what was written since). A site that cannot be moved stays',
    'where it is, serving, and is named with why; run the command again to retry those. Then berth',
    'nodes remove NODE.',
    '',
    `${STEPS_NOTE} For example:`,
    '  draining node_7f3k2q and moving its sites off, one by one',
    '  shop: moving to control',
    ...MOVE_STEPS_EXAMPLE,
    '  blog: moving to node_9x2m1p',
    '  ...',
    '',
    CLUSTER_NOTE,
    '',
    'Exit status: 0; 1 for a removed node, or when a site could not be moved; 2 for an unknown NODE',
    'or the control plane.',
  ].join('\n'),
  options: {
    move: { type: 'boolean', help: 'Also move every site of the node to the other active nodes, files carried over.' },
    ...STORE_OPTIONS,
    ...COMMON_OPTIONS,
  },
  examples: ['berth nodes drain node_7f3k2q', 'berth nodes drain node_7f3k2q --move'],
  run(ctx) {
    const id = onlyArgument(ctx, 'node id', 'berth nodes drain NODE [--move]')
    const move = ctx.values.move === true
    return withNodeOps(ctx, 'nodes/drain', { id, move }, (result: NodeView | DrainView) => {
      if (move) {
        const drained = result as DrainView
        ctx.out.result(drained, () => drainMoveText(drained))
        return drained.moves.some((m) => m.result === 'failed') ? 1 : 0
      }
      const node = result as NodeView
      ctx.out.result(node, () => `Drained ${id}: no new site goes there. It still runs ${node.sites.length} site(s)${node.sites.length ? ` (${node.sites.join(', ')}); berth nodes drain ${id} --move moves them off, files and all` : `; berth nodes remove ${id} takes it out`}.`)
      return 0
    })
  },
}

/** `berth nodes undrain` and its other name, `berth nodes resume`. */
function undrainCommand(word: 'undrain' | 'resume'): Command {
  return {
    path: ['nodes', word],
    summary: `Put a draining node back: new sites and moves may go there again${word === 'resume' ? ' (the same as berth nodes undrain)' : ' (also: berth nodes resume)'}.`,
    usage: `berth nodes ${word} NODE [--json] [--data-dir DIR] [--config FILE]`,
    description: [
      'Turns a draining node (berth nodes drain, or left so by an evacuation) active again: placement may',
      'choose it for new sites and moves. Its sites, if any, never stopped; nothing else changes, and the',
      'node needs no new join. An active node stays active. A down node is refused: it turns active by',
      'itself once its agent answers again. A removed node is refused: join the box again instead.',
      '',
      CLUSTER_NOTE,
      '',
      'Exit status: 0; 1 for a down or removed node; 2 for an unknown NODE or the control plane.',
    ].join('\n'),
    options: { ...STORE_OPTIONS, ...COMMON_OPTIONS },
    examples: [`berth nodes ${word} node_7f3k2q`],
    run(ctx) {
      const id = onlyArgument(ctx, 'node id', `berth nodes ${word} NODE`)
      return withNodeOps(ctx, 'nodes/undrain', { id }, (node: NodeView) => {
        ctx.out.result(node, () => `${id} is ${node.state}: new sites and moves may go there again.`)
        return 0
      })
    },
  }
}

export const nodesUndrainCommand = undrainCommand('undrain')
export const nodesResumeCommand = undrainCommand('resume')

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
    return withNodeOps(ctx, 'nodes/remove', { id }, (node: NodeView) => {
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
    'The node\'s agent is asked first: a node that answers, whatever its state (active, draining,',
    'down a moment ago), is refused, even with --force: berth nodes drain NODE --move empties it',
    'with its files, an evacuation only with what the last archives hold. A node that does not',
    'answer but is not down yet (berth serve marks it down after 6 s) needs --force, and so does',
    'one whose box still answers (its engine, on the Swarm\'s port 7946). A draining node (never',
    'marked down: a drained one, or one an evacuation stopped in the middle left so) whose agent',
    'and box are both silent is evacuated (again) without it. Each site\'s line says what is lost:',
    'the changes since its archive\'s time.',
    '',
    `${STEPS_NOTE} For example:`,
    '  evacuating node_7f3k2q: asking its agent, then bringing each site back from its newest archive',
    '  shop: coming back on control from archive 6f1c... (data from 2026-11-26T04:20:11.000Z)',
    '  shop: stopped, pinned to control; the edge answers its "being brought back" page',
    '  shop: volume made on control',
    '  shop: files restored on control (12.4 MiB, 1.4 s)',
    '  shop: started on control, answering there',
    '  shop: back on control',
    '',
    CLUSTER_NOTE,
    '',
    'Exit status: 0 when every site is back (with or without data); 1 when one could not be brought',
    'back, the agent answers, it does not but its box does or the node is not down yet (without',
    '--force; a draining node whose box is silent too is evacuated), or it is removed; 2 for an',
    'unknown NODE or the control plane.',
  ].join('\n'),
  options: {
    force: { type: 'boolean', help: 'Evacuate a node whose agent does not answer though it is not down yet or its box answers (never one whose agent answers).' },
    ...STORE_OPTIONS,
    ...COMMON_OPTIONS,
  },
  examples: ['berth nodes evacuate node_7f3k2q', 'berth nodes evacuate node_7f3k2q --json'],
  run(ctx) {
    const id = onlyArgument(ctx, 'node id', 'berth nodes evacuate NODE [--force]')
    return withNodeOps(ctx, 'nodes/evacuate', { id, force: ctx.values.force === true }, (result: EvacuationView) => {
      ctx.out.result(result, () => evacuationText(result))
      return result.sites.some((s) => s.result === 'failed') ? 1 : 0
    })
  },
}

/** This file's commands, for cli/index.ts. */
export const NODE_OPS_COMMANDS: Command[] = [nodesListCommand, nodesDrainCommand, nodesUndrainCommand, nodesResumeCommand, nodesRemoveCommand, nodesEvacuateCommand]

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
    if (s.result === 'restored') return `  ${s.slug}: on ${s.node}, data from ${s.data_from} (${s.archive!.kind}${s.archive!.source === 'offsite' ? ', from the copy off the box' : ''}): LOST its changes of the last ${duration(s.lost_ms ?? 0)}`
    if (s.result === 'empty') return `  ${s.slug}: on ${s.node}, WITHOUT DATA: it had no archive; it serves an empty home (all its files are lost)`
    return `  ${s.slug}: NOT BACK: ${s.problem}`
  })
  return [`Evacuated ${r.node} (left draining; berth nodes remove ${r.node} once you are done with it):`, ...lines].join('\n')
}

function drainMoveText(r: DrainView): string {
  const lines = r.moves.map((m) => m.result === 'moved'
    ? `  ${m.slug}: moved to ${m.to}, files carried over (did not serve for ${((m.unavailable_ms ?? 0) / 1000).toFixed(1)} s)`
    : `  ${m.slug}: NOT MOVED, still on ${r.id} and serving: ${m.problem}`)
  const head = `Drained ${r.id}: no new site goes there.`
  if (r.moves.length === 0) return `${head} It runs no site; berth nodes remove ${r.id} takes it out.`
  const left = r.sites.length ? `It still runs ${r.sites.join(', ')}: run berth nodes drain ${r.id} --move again once the reason is fixed.` : `It runs no site now; berth nodes remove ${r.id} takes it out.`
  return [head, ...lines, left].join('\n')
}

/** A duration as people read it: 42 s, 12 min, 3 h 5 min, 2 d 4 h. */
export function duration(ms: number): string {
  const s = Math.round(ms / 1000)
  if (s < 60) return `${s} s`
  const min = Math.floor(s / 60)
  if (min < 60) return `${min} min`
  const h = Math.floor(min / 60)
  if (h < 48) return `${h} h ${min % 60} min`
  return `${Math.floor(h / 24)} d ${h % 24} h`
}
