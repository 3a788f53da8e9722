import { databasePath } from '../compose'
import { migrate, pendingMigrations } from '../store/migrate'
import { openStore } from '../store/store'
import { COMMON_OPTIONS, STORE_OPTIONS, type Command } from './command'
import { configFrom } from './config-flags'
import { lockOrSay } from './admin'

export const migrateCommand: Command = {
  path: ['migrate'],
  summary: 'Apply the database migrations embedded in this binary.',
  usage: 'berth migrate [--dry-run] [--data-dir DIR] [--config FILE] [--json]',
  description: '`berth serve` migrates on start; run this to migrate ahead of an upgrade, or --dry-run to see what would run. It holds DATA_DIR/berth.lock meanwhile: it exits 1, naming the holder, while berth serve or berth restore works on the data folder (stop berth serve first).',
  options: {
    'dry-run': { type: 'boolean', help: 'List the pending migrations without applying them.' },
    ...STORE_OPTIONS,
    ...COMMON_OPTIONS,
  },
  examples: ['berth migrate', 'berth migrate --dry-run --json'],
  run(ctx) {
    const config = configFrom(ctx)
    const path = databasePath(config)
    // Alone on the data folder: refused while berth serve (which migrates at its start) or a restore runs.
    const lock = lockOrSay(ctx, config.server.dataDir, 'berth migrate')
    if (!lock) return 1
    const store = openStore(path)
    try {
      const dryRun = ctx.values['dry-run'] === true
      const ids = dryRun ? pendingMigrations(store) : migrate(store)
      ctx.out.result({ database: path, dry_run: dryRun, migrations: ids }, () =>
        ids.length === 0 ? `${path}: up to date` : `${path}: ${dryRun ? 'would apply' : 'applied'} ${ids.join(', ')}`,
      )
      return 0
    } finally {
      store.close()
      lock.release()
    }
  },
}
