import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { EdgeAccessRecord, SiteTarget } from '../../edge/types'
import { memoryLogger } from '../../lib/logger'
import { openSiteHome } from '../../drivers/files/home'
import { combinedLine, EdgeAccessLog } from './access-log'

const request = (over: Partial<EdgeAccessRecord> = {}): EdgeAccessRecord => ({
  at: Date.UTC(2026, 10, 5, 7, 3, 4), clientAddress: '203.0.113.9', method: 'GET', target: '/search?q=boats&page=2',
  status: 200, bytesOut: 512, referer: null, userAgent: 'curl/8.5.0', ...over,
})

describe('combinedLine', () => {
  it("is nginx's combined format, with the request target as sent, query included", () => {
    expect(combinedLine(request())).toBe('203.0.113.9 - - [05/Nov/2026:07:03:04 +0000] "GET /search?q=boats&page=2 HTTP/1.1" 200 512 "-" "curl/8.5.0"\n')
  })

  it('escapes quotes, backslashes, control and non-ASCII bytes as nginx does, so no request forges a field or a line', () => {
    const line = combinedLine(request({ target: '/a"b\\c', referer: 'x\ny', userAgent: 'é' }))
    expect(line).toBe('203.0.113.9 - - [05/Nov/2026:07:03:04 +0000] "GET /a\\x22b\\x5Cc HTTP/1.1" 200 512 "x\\x0Ay" "\\xC3\\xA9"\n')
    expect(line.split('\n')).toHaveLength(2)
  })
})

describe('EdgeAccessLog', () => {
  let home: string
  const log = memoryLogger()
  const site = { siteId: 's1', slug: 'shop', state: 'serving' } as SiteTarget
  let writer: EdgeAccessLog

  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'berth-access-'))
    log.lines.length = 0
    writer = new EdgeAccessLog({ homePath: async () => home }, log, openSiteHome)
  })
  afterEach(async () => {
    await writer.close()
    rmSync(home, { recursive: true, force: true })
  })

  it("appends to ~/logs/access.log (made as the site's user when missing), after what is already there", async () => {
    writer.write(site, request())
    await writer.flush()
    const file = join(home, 'logs', 'access.log')
    expect(statSync(file)).toMatchObject({ uid: 1000, gid: 1000 })
    expect(statSync(file).mode & 0o777).toBe(0o644)
    writer.write(site, request({ target: '/two?x=1', status: 404 }))
    writer.write(site, request({ target: '/three' }))
    await writer.flush()
    const lines = readFileSync(file, 'utf8').trim().split('\n')
    expect(lines).toHaveLength(3)
    expect(lines[1]).toContain('"GET /two?x=1 HTTP/1.1" 404 ')
    expect(lines[2]).toContain('"GET /three HTTP/1.1" 200 ')
  })

  it('writes on its own within a second', async () => {
    writer.write(site, request())
    const file = join(home, 'logs', 'access.log')
    const deadline = Date.now() + 1_000
    while (Date.now() < deadline) {
      try {
        if (readFileSync(file, 'utf8').length > 0) return
      } catch {}
      await Bun.sleep(20)
    }
    throw new Error('not written within a second')
  })

  it('never follows a symlink nor opens a FIFO the tenant planted: the lines are dropped and it says so once', async () => {
    mkdirSync(join(home, 'logs'))
    writeFileSync(join(home, 'outside.txt'), 'untouched\n')
    symlinkSync('../outside.txt', join(home, 'logs', 'access.log'))
    writer.write(site, request())
    writer.write(site, request())
    await writer.flush()
    writer.write(site, request())
    await writer.flush()
    expect(readFileSync(join(home, 'outside.txt'), 'utf8')).toBe('untouched\n')
    expect(log.lines.filter((l) => l.msg === "could not write a site's access log")).toHaveLength(1)
    rmSync(join(home, 'logs', 'access.log'))
    execFileSync('mkfifo', [join(home, 'logs', 'access.log')])
    const fresh = new EdgeAccessLog({ homePath: async () => home }, log, openSiteHome)
    fresh.write(site, request())
    // Resolves (a FIFO would block an open for writing): it is refused unopened.
    await fresh.close()
    expect(log.lines.filter((l) => l.msg === "could not write a site's access log").at(-1)?.error).toMatch(/not a regular file/)
  })
})
