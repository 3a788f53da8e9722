import { afterAll, describe, expect, it } from 'vitest'
import { buyInProcess } from '../../../test/helpers/home-runtime'
import { inProcess } from '../../../test/helpers/in-process'
import { SiteNotRunnableError } from '../../drivers/runtime/types'
import { DomainError } from '../errors'
import { AdminShell } from './admin-shell'
import { SitesRepository } from './repository'

/**
 * What `berth sites shell` refuses, in-process on a real store with the RecordingRuntime (whose
 * openTerminal finds no running container); test/sites-shell.e2e.test.ts runs real shells.
 */
const h = inProcess()
afterAll(() => h.close())
const shell = new AdminShell({ sites: new SitesRepository(h.services.store), runtime: h.services.runtime, audit: h.services.audit, home: '/home/site' })
const request = (slug: string) => ({ slug, argv: ['true'], user: 'site' as const, admin: 'alice', cols: 80, rows: 24 })
const auditCount = () => h.services.store.sqlite.query<{ n: number }, []>('SELECT count(*) n FROM audit_events').get()!.n

describe('AdminShell', () => {
  it('refuses a slug no live site holds (unknown, or deleted) as not_found, recording nothing', async () => {
    const { slug } = await buyInProcess(h, 'svc_starter_monthly', 'gone')
    h.services.store.sqlite.run("UPDATE sites SET status = 'deleted' WHERE slug = ?", [slug])
    for (const target of ['no-such-site', slug]) {
      const err = await shell.open(request(target)).catch((e) => e)
      expect(err).toBeInstanceOf(DomainError)
      expect(err).toMatchObject({ kind: 'not_found', field: 'slug' })
      expect(err.message).toContain(`No site '${target}' on this box`)
    }
    expect(auditCount()).toBe(0)
  })

  it('records a session that could not start (no running container) as ended, with why', async () => {
    const { slug, key } = await buyInProcess(h, 'svc_starter_monthly', 'stopped')
    await expect(shell.open({ ...request(slug), user: 'root' })).rejects.toBeInstanceOf(SiteNotRunnableError)
    const res = await h.call('GET', `/api/v1/sites/${slug}/logs/?type=audit`, { key })
    expect(res.json.data.lines).toEqual([expect.stringMatching(/Z shell admin=alice as=root exit=none duration_ms=0 reason="did not start: The site '[^']+' has no terminal in the recording runtime\." cmd: true$/)])
  })
})
