import { existsSync } from 'node:fs'
import { databasePath } from '../compose'
import type { OffsitePushView } from '../admin/facades'
import { offsiteStatusOf } from '../compose/admin'
import type { Config } from '../config/config'
import type { OffsiteStatus } from '../domain/offsite'
import { shiftedClock } from '../lib/clock'
import { pendingMigrations } from '../store/migrate'
import { openStore, type Store } from '../store/store'
import { COMMON_OPTIONS, STORE_OPTIONS, type Command, type CommandContext } from './command'
import { configFrom } from './config-flags'
import { lockOrSay, viaServer } from './admin'

export const offsiteStatusCommand: Command = {
  path: ['offsite', 'status'],
  summary: 'How the encrypted copies off the box stand: the last store copy and its age, what waits, the last error and drill.',
  usage: 'berth offsite status [--data-dir DIR] [--config FILE] [--json]',
  description: [
    'Asks berth serve (over its admin socket) when it runs; with none running it reads the store',
    '(berth.db) itself, holding DATA_DIR/berth.lock, so it answers either way: what the last pass',
    'recorded. `stale` is true when the last store copy is',
    'older than three offsite.store_interval_seconds (berth serve then logs an error each pass).',
    '`signing_key` (Signing key) is the public half of the key the box signs every manifest with: keep',
    'it off the box with your age identity; berth restore --signing-key needs it to accept a copy. It is',
    'made on first use while offsite.url is set.',
    'What is copied and when: docs/operations.md, "Copies off the box".',
  ].join('\n'),
  options: { ...STORE_OPTIONS, ...COMMON_OPTIONS },
  examples: ['berth offsite status', 'berth offsite status --json | jq .last_store_copy.age_seconds', 'berth offsite status --json | jq -r .signing_key'],
  run(ctx) {
    const config = configFrom(ctx)
    const print = (status: OffsiteStatus) => {
      ctx.out.result(status, () => renderStatus(status))
      return 0
    }
    return viaServer(ctx, 'offsite/status', {}, print, { offline: async () => {
      const lock = lockOrSay(ctx, config.server.dataDir, 'berth offsite status')
      if (!lock) return { ok: false }
      try {
        let status: OffsiteStatus | null = null
        const code = await withStore(ctx, config, (store) => {
          status = offsiteStatusOf(config, store, shiftedClock(config.dev.clockOffsetSeconds * 1000).now())
          return 0
        })
        return code === 0 && status ? { ok: true, result: status } : { ok: false }
      } finally {
        lock.release()
      }
    } })
  },
}

export const offsitePushCommand: Command = {
  path: ['offsite', 'push'],
  summary: 'Copy now: every pending copy off the box, then a fresh store copy and manifest.',
  usage: 'berth offsite push [--data-dir DIR] [--config FILE] [--json]',
  description: [
    'Puts every archive copy that waits and deletes every copy retention let go, whatever their retry',
    'time, then copies the store (with the tls folder when it changed) and writes a manifest naming it.',
    'berth serve does it, asked on its admin socket (DATA_DIR/admin.sock, root only), and this command',
    'prints what it did; with no berth serve running it exits 1 saying how to start it. Exits 1',
    'naming each copy that failed and why (an unreachable destination, refused credentials, a full disk).',
    '',
    'Each copy prints as berth serve sends it, one line with its figures (with --json: as {"progress":',
    'LINE, "step": {...}} lines on stderr, stdout holding only the result). For example:',
    '  copying what waits, then the store and its manifest',
    '    copied archives/4b1e.../6f1c....tar.zst.age (12.4 MiB, 2.1 s)',
    '    deleted archives/4b1e.../09aa....tar.zst.age (retention let it go)',
    '    store copied, manifest manifests/20261126T042011000Z-b102ae4a.json.age (0.8 s)',
  ].join('\n'),
  options: { ...STORE_OPTIONS, ...COMMON_OPTIONS },
  examples: ['berth offsite push', 'berth offsite push --json'],
  run(ctx) {
    const config = configFrom(ctx)
    if (!config.offsite.url) {
      ctx.out.error('offsite.url is empty: copies off the box are off; set offsite.url and offsite.age_recipients (docs/configuration.md)')
      return 1
    }
    return viaServer<OffsitePushView>(ctx, 'offsite/push', {}, (data) => {
      if (data.failures.length > 0) {
        for (const f of data.failures) ctx.out.error(`${f.key === 'store' ? 'the store copy' : f.key || 'the pass'}: ${f.error}`)
        if (ctx.out.json) ctx.out.result(data, () => '')
        return 1
      }
      ctx.out.result(data, () => `${data.destination}: ${data.copied} archive copies made, ${data.deleted} deleted; the store copied, manifest ${data.manifest}`)
      return 0
    })
  },
}

/** Runs `fn` on the store of the config's data folder, migrated to this binary's version. */
async function withStore(ctx: CommandContext, config: Config, fn: (store: Store) => number | Promise<number>): Promise<number> {
  const path = databasePath(config)
  if (!existsSync(path)) {
    ctx.out.error(`${path} does not exist: berth serve makes the store on its first start (or pass --data-dir)`)
    return 1
  }
  const store = openStore(path)
  try {
    const pending = pendingMigrations(store)
    if (pending.length > 0) {
      ctx.out.error(`${path} is not migrated to this berth (${pending.join(', ')} pending): run berth migrate, or start berth serve`)
      return 1
    }
    return await fn(store)
  } finally {
    store.close()
  }
}

function renderStatus(s: OffsiteStatus): string {
  if (!s.enabled && !s.last_store_copy) return 'Copies off the box are off (offsite.url is empty).'
  const lines = [
    `Destination:      ${s.destination ?? 'none (offsite.url is empty; the copies below were made before)'}`,
    `Signing key:      ${s.signing_key ?? 'none yet'} (keep it off the box: berth restore --signing-key)`,
    `Last store copy:  ${s.last_store_copy ? `${s.last_store_copy.made_at} (${ageText(s.last_store_copy.age_seconds)} ago)${s.stale ? ', OLDER THAN THREE INTERVALS' : ''}` : `none${s.stale ? ' (copies are on: see the last error)' : ''}`}`,
    `Last manifest:    ${s.last_manifest ? `${s.last_manifest.key}` : 'none'}`,
    `Archives waiting: ${s.archives.pending} to copy, ${s.archives.deleting} to delete`,
    `Other copies:     ${s.others.pending} unfinished, ${s.others.deleting} to delete`,
    `Last error:       ${s.last_error ? `${s.last_error.message} (${s.last_error.key}, ${s.last_error.attempts} attempts, next at ${s.last_error.next_attempt_at})` : 'none'}`,
    `Last drill:       ${s.last_drill ? `${s.last_drill.at}: ${s.last_drill.ok ? 'read back whole' : `FAILED: ${s.last_drill.error}`} (${s.last_drill.key})` : 'none yet'}`,
  ]
  return lines.join('\n')
}

function ageText(seconds: number): string {
  if (seconds < 120) return `${seconds} s`
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`
  return `${Math.round(seconds / 3600)} h`
}
