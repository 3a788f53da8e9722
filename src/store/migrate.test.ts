import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { renderMigrationsModule } from '../../scripts/embed-migrations'
import { migrate, MigrationError, pendingMigrations } from './migrate'
import { MIGRATIONS } from './migrations'
import { openStore } from './store'

const fresh = () => openStore(join(mkdtempSync(join(tmpdir(), 'berth-store-')), 'berth.db'))

describe('migrations', () => {
  it('the embedded module matches the generated .sql files', async () => {
    const file = await Bun.file(join(import.meta.dirname, 'migrations', 'index.ts')).text()
    expect(file).toBe(renderMigrationsModule())
  })

  it('applies every migration once, then nothing', () => {
    const store = fresh()
    expect(pendingMigrations(store)).toEqual(MIGRATIONS.map((m) => m.id))
    expect(migrate(store)).toEqual(MIGRATIONS.map((m) => m.id))
    expect(migrate(store)).toEqual([])
    const tables = store.sqlite.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table'").all().map((r) => r.name)
    expect(tables).toEqual(expect.arrayContaining(['accounts', 'api_keys', 'plans', 'sites', 'subscriptions', 'rate_limit_hits']))
    store.close()
  })

  it("gives plans made before 0008_plan_ai_tokens the allowance their sites had: 200000 where a module calls the model, else 0", () => {
    const store = fresh()
    const upTo = MIGRATIONS.findIndex((m) => m.id === '0008_plan_ai_tokens')
    migrate(store, MIGRATIONS.slice(0, upTo))
    const insert = store.sqlite.prepare(`INSERT INTO plans (slug, name, track, hosting_type, price_monthly_cents, price_annual_cents, max_sites, ai_modules,
      free_domain_annual, memory_mb, cpu_cores, disk_gb, position, created_at, updated_at) VALUES (?, 'P', 'single_site', 'shared', 100, 1000, 1, ?, 0, 256, 1, 5, ?, 0, 0)`)
    const modules = { none: [], 'seo-only': ['seo'], chat: ['chatbot', 'seo'], writer: ['seo', 'content'], all: ['chatbot', 'seo', 'translation', 'content'] }
    Object.entries(modules).forEach(([slug, list], i) => insert.run(slug, JSON.stringify(list), i))
    expect(migrate(store)).toEqual(MIGRATIONS.slice(upTo).map((m) => m.id))
    const rows = store.sqlite.query<{ slug: string; ai_tokens_monthly: number }, []>('SELECT slug, ai_tokens_monthly FROM plans').all()
    expect(Object.fromEntries(rows.map((r) => [r.slug, r.ai_tokens_monthly]))).toEqual({ none: 0, 'seo-only': 0, chat: 200_000, writer: 200_000, all: 200_000 })
    store.close()
  })

  it('opens the database in WAL mode with synchronous=FULL and foreign keys on', () => {
    const store = fresh()
    expect(store.sqlite.query('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' })
    expect(store.sqlite.query('PRAGMA synchronous').get()).toEqual({ synchronous: 2 })
    expect(store.sqlite.query('PRAGMA foreign_keys').get()).toEqual({ foreign_keys: 1 })
    store.close()
  })

  it('rolls back a failed migration completely', () => {
    const store = fresh()
    migrate(store)
    const broken = [...MIGRATIONS, { id: '9999_broken', sql: 'CREATE TABLE half (id TEXT);--> statement-breakpoint\nTHIS IS NOT SQL' }]
    expect(() => migrate(store, broken)).toThrow()
    expect(store.sqlite.query("SELECT name FROM sqlite_master WHERE name = 'half'").get()).toBeNull()
    expect(pendingMigrations(store, broken)).toEqual(['9999_broken'])
    store.close()
  })

  it('refuses a database migrated by a newer berth', () => {
    const store = fresh()
    migrate(store, [...MIGRATIONS, { id: '9999_future', sql: 'CREATE TABLE future (id TEXT)' }])
    expect(() => migrate(store)).toThrowError(MigrationError)
    store.close()
  })

  it('write() is all or nothing', () => {
    const store = fresh()
    migrate(store)
    expect(() => store.write(() => {
      store.sqlite.prepare("INSERT INTO settings (key, value) VALUES ('a', '1')").run()
      throw new Error('halfway')
    })).toThrowError('halfway')
    expect(store.sqlite.query("SELECT * FROM settings WHERE key = 'a'").get()).toBeNull()
    store.close()
  })
})
