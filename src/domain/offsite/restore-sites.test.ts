import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { LocalWorkFolder } from '../../drivers/archives/work-folder'
import { HostPortTakenError } from '../../drivers/runtime/types'
import { memoryLogger } from '../../lib/logger'
import type { ArchiveRow, SiteRow } from '../../store/schema'
import type { OffsiteManifest } from './manifest'
import { SitesReturn } from './restore-sites'

/**
 * The second half of `berth restore` with doubles that record the order of what it asks: files
 * back before the container first runs, the archive chosen, what each status gets. The drill
 * (test/offsite-restore.e2e.test.ts) runs it on real Docker.
 */
let dir: string
let calls: string[]
let rows: Map<string, SiteRow>
let portTaken: Set<string>
let failReplace: Set<string>
let archiveRows: Map<string, ArchiveRow>

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-sites-return-'))
  calls = []
  rows = new Map()
  portTaken = new Set()
  failReplace = new Set()
  archiveRows = new Map()
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

const site = (slug: string, status: SiteRow['status']): SiteRow => {
  const row = { id: `id-${slug}`, slug, status, planSlug: 'business', sshPort: 2222 } as SiteRow
  rows.set(row.id, row)
  return row
}

function sitesReturn() {
  return new SitesReturn({
    sites: {
      listWithStatus: (statuses) => [...rows.values()].filter((r) => statuses.includes(r.status)),
      find: (id) => rows.get(id),
    },
    runner: {
      run: async (s, opts) => {
        calls.push(`run ${s.slug} wait=${opts?.waitForAnswer === true} port=${s.sshPort}`)
        if (portTaken.delete(s.slug)) {
          rows.set(s.id, { ...s, sshPort: s.sshPort! + 1 })
          throw new HostPortTakenError(s.sshPort!, 'taken')
        }
        return { containerId: 'c', address: '10.0.0.2', port: 8080 }
      },
      stop: async (slug) => void calls.push(`stop ${slug}`),
      spec: (s) => ({ siteId: s.id, slug: s.slug, hostingType: 'shared', image: 'berth/static:1', memoryMb: 256, cpuCores: 1, pidsLimit: 256, diskGb: 1, sshPort: s.sshPort }),
    },
    runtime: {
      prepareSite: async (s) => void calls.push(`prepare ${s.slug}`),
      homePath: async (slug) => `/homes/${slug}`,
      withSitePaused: async (slug, fn) => {
        calls.push(`paused ${slug}`)
        return fn()
      },
    },
    tar: {
      tarHome: async () => {},
      compressFile: async () => {},
      decompressFile: async (from, to) => void writeFileSync(to, 'tar'),
      scanTar: async () => ({ files: 1234, bytes: 12_000_000 }),
      replaceHome: async (home) => {
        calls.push(`replace ${home}`)
        if (failReplace.has(home)) throw new Error('tar --extract failed (exit 2): No space left on device')
      },
    },
    archives: {
      get: async (key, to) => {
        calls.push(`get ${key}`)
        writeFileSync(to, 'zst')
      },
    },
    archiveRows: {
      withStatus: (statuses) => [...archiveRows.values()].filter((r) => statuses.includes(r.status)),
      transition: (id, from, changes) => {
        const row = archiveRows.get(id)
        if (!row || !from.includes(row.status)) return false
        archiveRows.set(id, { ...row, ...changes })
        return true
      },
    },
    clock: { now: () => 1_000 },
    work: new LocalWorkFolder(join(dir, 'work')),
    log: memoryLogger(),
  })
}

const archive = (siteId: string, id: string, kind: 'backup' | 'snapshot' | 'deployment' = 'backup') => ({ key: `archives/${siteId}/${id}.tar.zst.age`, sha256: '0'.repeat(64), bytes: 1, id, kind, storage_key: `${siteId}/${id}.tar.zst`, created_at: '2026-11-25T09:00:00.000Z' })
const manifestOf = (sites: SiteRow[], archives: Record<string, ReturnType<typeof archive>[]>) =>
  ({ sites: sites.map((s) => ({ id: s.id, slug: s.slug, status: s.status, archives: archives[s.slug] ?? [] })) }) as unknown as OffsiteManifest

describe('bringing the sites back', () => {
  it('an active site: files from its newest archive that came back, before its container first runs, then waited for', async () => {
    const shop = site('shop', 'active')
    const m = manifestOf([shop], { shop: [archive(shop.id, 'snap2', 'snapshot'), archive(shop.id, 'back1')] })
    const outcome = await sitesReturn().bring(shop, m, new Set(['back1']))
    expect(outcome).toEqual({ slug: 'shop', status: 'active', archive: { id: 'back1', kind: 'backup', created_at: '2026-11-25T09:00:00.000Z' }, files: 1234, bytes: 12_000_000, result: 'serving', ok: true, problem: null })
    expect(calls).toEqual(['prepare shop', 'stop shop', 'get id-shop/back1.tar.zst', 'paused shop', 'replace /homes/shop', 'run shop wait=true port=2222'])
  })

  it("an active site whose newest archive is a deployment's record: files from its newest backup (the record has no ~/.ssh)", async () => {
    const shop = site('shop', 'active')
    const m = manifestOf([shop], { shop: [archive(shop.id, 'dep3', 'deployment'), archive(shop.id, 'back1')] })
    expect((await sitesReturn().bring(shop, m, new Set(['dep3', 'back1']))).archive).toMatchObject({ id: 'back1', kind: 'backup' })
    // With no backup or snapshot back, the record is better than an empty home.
    const only = manifestOf([shop], { shop: [archive(shop.id, 'dep3', 'deployment')] })
    expect((await sitesReturn().bring(shop, only, new Set(['dep3']))).archive).toMatchObject({ id: 'dep3', kind: 'deployment' })
  })

  it('a suspended site and one pending deletion: made with their files, then stopped', async () => {
    const [a, b] = [site('asleep', 'suspended'), site('leaving', 'pending_deletion')]
    const m = manifestOf([a, b], { asleep: [archive(a.id, 'x')], leaving: [archive(b.id, 'y')] })
    const r = sitesReturn()
    expect((await r.bring(a, m, new Set(['x', 'y']))).result).toBe('stopped')
    expect((await r.bring(b, m, new Set(['x', 'y']))).result).toBe('stopped')
    expect(calls.filter((c) => c.startsWith('run') || c.startsWith('stop'))).toEqual(['stop asleep', 'run asleep wait=false port=2222', 'stop asleep', 'stop leaving', 'run leaving wait=false port=2222', 'stop leaving'])
  })

  it('a site with no archive back runs with an empty home and is reported as not whole', async () => {
    const [none, broken] = [site('none', 'active'), site('broken', 'active')]
    const m = manifestOf([none, broken], { broken: [archive(broken.id, 'bad')] })
    const r = sitesReturn()
    expect(await r.bring(none, m, new Set())).toMatchObject({ result: 'serving', ok: false, archive: null, files: null, problem: 'no archive of it was copied: its home is empty' })
    expect(await r.bring(broken, m, new Set())).toMatchObject({ result: 'serving', ok: false, problem: 'none of its archives came back intact: its home is empty' })
    expect(calls.some((c) => c.startsWith('replace'))).toBe(false)
  })

  it('a site whose SSH port is taken here runs on the next port the runner gave it', async () => {
    const shop = site('shop', 'active')
    portTaken.add('shop')
    const outcome = await sitesReturn().bring(shop, manifestOf([shop], { shop: [archive(shop.id, 'a')] }), new Set(['a']))
    expect(outcome.result).toBe('serving')
    expect(calls.filter((c) => c.startsWith('run'))).toEqual(['run shop wait=true port=2222', 'run shop wait=true port=2223'])
  })

  it('a failure is that site\'s only, with the reason; provisioning and failed sites have nothing to run', async () => {
    const [shop, fresh, dead] = [site('shop', 'active'), site('fresh', 'provisioning'), site('dead', 'failed')]
    failReplace.add('/homes/shop')
    const r = sitesReturn()
    expect(r.sites().map((s) => s.slug)).toEqual(['shop', 'fresh', 'dead'])
    const m = manifestOf([shop], { shop: [archive(shop.id, 'a')] })
    expect(await r.bring(shop, m, new Set(['a']))).toMatchObject({ result: 'failed', ok: false, problem: 'tar --extract failed (exit 2): No space left on device' })
    expect(await r.bring(fresh, m, new Set())).toMatchObject({ result: 'provisions on start', ok: true })
    expect(await r.bring(dead, m, new Set())).toMatchObject({ result: 'nothing to run', ok: true })
    expect(calls.filter((c) => c.includes('fresh') || c.includes('dead'))).toEqual([])
  })
})

describe('archives the copy did not bring back', () => {
  it('turn failed, saying why, so a restore of one is refused up front; those that came back and old failures stay as they were', () => {
    const archive = (id: string, status: ArchiveRow['status']) => archiveRows.set(id, { id, siteId: 'id-shop', kind: 'backup', status, storageKey: `id-shop/${id}.tar.zst`, sizeBytes: 1, fileCount: 1, createdAt: 1, completedAt: status === 'creating' ? null : 2, restoredAt: null, error: status === 'failed' ? 'disk full' : null } as ArchiveRow)
    archive('back', 'ready')
    archive('newer', 'ready')
    archive('in-flight', 'creating')
    archive('old-failure', 'failed')
    const settled = sitesReturn().settleArchives(new Set(['back']), { made_at: '2026-11-25T10:00:00.000Z' } as OffsiteManifest)
    expect(settled).toBe(2)
    expect(archiveRows.get('back')).toMatchObject({ status: 'ready', error: null })
    expect(archiveRows.get('newer')).toMatchObject({ status: 'failed', completedAt: 2, error: expect.stringContaining('not among the copies the box was rebuilt from (berth restore of the copy made 2026-11-25T10:00:00.000Z)') })
    expect(archiveRows.get('in-flight')).toMatchObject({ status: 'failed', completedAt: 1_000 })
    expect(archiveRows.get('old-failure')).toMatchObject({ status: 'failed', error: 'disk full' })
  })
})
