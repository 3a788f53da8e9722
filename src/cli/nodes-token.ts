import { existsSync } from 'node:fs'
import { databasePath } from '../compose'
import { issueJoinToken, makeNodesRepository } from '../domain/cluster'
import { readJoinTls } from '../drivers/cluster/pki'
import { shiftedClock } from '../lib/clock'
import { pendingMigrations } from '../store/migrate'
import { openStore } from '../store/store'
import type { JoinTokenView } from '../admin/facades'
import type { Config } from '../config/config'
import { COMMON_OPTIONS, STORE_OPTIONS, type Command, type CommandContext } from './command'
import { lockOrSay, viaServer } from './admin'
import { configFrom } from './config-flags'

export const nodesTokenCommand: Command = {
  path: ['nodes', 'token'],
  summary: 'Make a single-use token for berth node join, valid cluster.join_token_minutes.',
  usage: 'berth nodes token [--data-dir DIR] [--config FILE] [--json]',
  description: [
    'Run on the control plane (cluster.enabled = true). Prints a join token (bnj_ and 43 characters)',
    'and the command to run on the new box: its URL is the join listener (https://, cluster.address and',
    'cluster.join_port) and its --fingerprint the SHA-256 of that listener\'s certificate, which the node',
    'pins: it sends nothing to, and trusts nothing from, a box that shows another. The token joins one node, once, within',
    'cluster.join_token_minutes (60 by default); only its SHA-256 is kept in the store, so a lost',
    'token cannot be shown again: make another. berth serve makes it when it runs (asked on its admin',
    'socket); with none running, this command makes it in the store itself, holding DATA_DIR/berth.lock.',
    'What a join does, and the ports to open between the boxes: docs/cluster.md, "Joining a node".',
  ].join('\n'),
  options: { ...STORE_OPTIONS, ...COMMON_OPTIONS },
  examples: ['berth nodes token', 'berth nodes token --json | jq -r .token'],
  run(ctx) {
    const config = configFrom(ctx)
    if (!config.cluster.enabled) {
      ctx.out.error('cluster.enabled is false: set cluster.enabled = true and cluster.address in the config, restart berth serve, then make a token (docs/cluster.md)')
      return 1
    }
    const print = (t: JoinTokenView) => {
      ctx.out.result(t, () => [
        t.token,
        '',
        `Valid once, until ${t.expires_at}. On the new box (as root, Docker running), with its`,
        'address on the private network for NODE_ADDRESS:',
        `  ${t.command}`,
      ].join('\n'))
      return 0
    }
    return viaServer(ctx, 'nodes/token', {}, print, { offline: async () => {
      const lock = lockOrSay(ctx, config.server.dataDir, 'berth nodes token')
      if (!lock) return { ok: false }
      try {
        return tokenHere(ctx, config)
      } finally {
        lock.release()
      }
    } })
  },
}

/** The token made in this process, when no berth serve runs (it holds the data folder's lock meanwhile). */
function tokenHere(ctx: CommandContext, config: Config): { ok: true; result: JoinTokenView } | { ok: false } {
  const path = databasePath(config)
  if (!existsSync(path)) {
    ctx.out.error(`${path} does not exist: berth serve makes the store on its first start (or pass --data-dir)`)
    return { ok: false }
  }
  const joinTls = readJoinTls(config.server.dataDir)
  if (!joinTls) {
    ctx.out.error(`${config.server.dataDir}/cluster/join.pem does not exist: start berth serve once with cluster.enabled = true (it makes the cluster's certificates), then make a token`)
    return { ok: false }
  }
  const store = openStore(path)
  try {
    const pending = pendingMigrations(store)
    if (pending.length > 0) {
      ctx.out.error(`${path} is not migrated to this berth (${pending.join(', ')} pending): run berth migrate, or start berth serve`)
      return { ok: false }
    }
    const clock = shiftedClock(config.dev.clockOffsetSeconds * 1000)
    const { token, expiresAt } = issueJoinToken(makeNodesRepository(store), clock, config.cluster.joinTokenMinutes)
    const url = `https://${hostPart(config.cluster.address)}:${config.cluster.joinPort}`
    const fingerprint = `sha256:${joinTls.fingerprint}`
    const command = `berth node join ${url} --token ${token} --fingerprint ${fingerprint} --address NODE_ADDRESS`
    return { ok: true, result: { token, expires_at: new Date(expiresAt).toISOString(), url, fingerprint, command } }
  } finally {
    store.close()
  }
}

function hostPart(address: string): string {
  return address.includes(':') ? `[${address}]` : address
}
