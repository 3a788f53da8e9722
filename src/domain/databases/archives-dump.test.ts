import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { systemClock } from '../../lib/clock'
import { memoryLogger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import { DatabaseArchives, type DatabaseArchivesDeps } from './archives'
import type { DatabaseRuntime } from './ports'
import type { DatabasesRepository, SiteDatabaseRow } from './repository'

// An archive job's dump of a database that is being brought back (`recovering`: its container
// died a moment ago) waits for it: the archive holds its data or fails, never leaves it out.
const site = { id: 's1', slug: 'shop' } as SiteRow

function archivesOver(rows: SiteDatabaseRow[], recoveryWaitMs: number) {
  const dumped: string[] = []
  const archives = new DatabaseArchives({
    service: { specOf: (_s: SiteRow, row: SiteDatabaseRow) => ({ name: row.name }), opened: () => 'pw' } as unknown as DatabaseArchivesDeps['service'],
    repo: { list: () => rows, find: (_id: string, name: string) => rows.find((r) => r.name === name) } as unknown as DatabasesRepository,
    runtime: { dump: async (spec: { name: string }) => (dumped.push(spec.name), { bytes: 3 }) } as unknown as DatabaseRuntime,
    plans: { get: () => { throw new Error('unused') } },
    audit: {} as DatabaseArchivesDeps['audit'],
    clock: systemClock,
    log: memoryLogger(),
    archives: {} as DatabaseArchivesDeps['archives'],
    changed: async () => {},
    recoveryWaitMs,
  })
  return { archives, dumped }
}
const row = (name: string, state: SiteDatabaseRow['state']) => ({ id: name, siteId: 's1', name, engine: 'postgres', state, error: null }) as SiteDatabaseRow

describe('DatabaseArchives: a recovering database in an archive', () => {
  it('is among the databases an archive dumps', () => {
    const { archives } = archivesOver([row('main', 'recovering'), row('cache', 'available'), row('old', 'deleted')], 1000)
    expect(archives.dumpable(site).map((d) => d.name)).toEqual(['main', 'cache'])
  })

  it('is dumped once it is available again', async () => {
    const rows = [row('main', 'recovering')]
    const { archives, dumped } = archivesOver(rows, 5000)
    setTimeout(() => { rows[0]!.state = 'available' }, 300)
    const started = Date.now()
    await expect(archives.dump(site, 'main', new PassThrough())).resolves.toEqual({ bytes: 3 })
    expect(Date.now() - started).toBeGreaterThanOrEqual(250)
    expect(dumped).toEqual(['main'])
  })

  it('fails the dump (and so the archive) when it is still not back after the wait', async () => {
    const { archives, dumped } = archivesOver([row('main', 'recovering')], 400)
    await expect(archives.dump(site, 'main', new PassThrough())).rejects.toThrow(/still being brought back/)
    expect(dumped).toEqual([])
  })
})
