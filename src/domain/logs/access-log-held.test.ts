import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { NodeUnreachableError } from '../../drivers/cluster/types'
import { openSiteHome } from '../../drivers/files/home'
import type { OpenHome } from '../../drivers/files/types'
import type { EdgeAccessRecord, SiteTarget } from '../../edge/types'
import { memoryLogger } from '../../lib/logger'
import { EdgeAccessLog, MAX_PENDING_BYTES } from './access-log'

/**
 * The access log of a site on a node that does not answer (issue 36 item 8: its lines were
 * dropped): kept, bounded, and written once the node answers. Real files through the real
 * SiteHome; the node's reachability is a switch in front of it (the agent's link throws
 * NodeUnreachableError as drivers/cluster/link.ts does).
 */
const request = (n: number): EdgeAccessRecord => ({
  at: Date.UTC(2026, 10, 5, 7, 3, 4), clientAddress: '203.0.113.9', method: 'GET', target: `/page/${n}`, status: 200, bytesOut: 512, referer: null, userAgent: 'curl/8.5.0',
})
const site = { siteId: 's1', slug: 'shop', state: 'serving' } as SiteTarget
const other = { siteId: 's2', slug: 'blog', state: 'serving' } as SiteTarget

let dir: string
let writer: EdgeAccessLog
const log = memoryLogger()
let nodeAnswers = false
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-access-held-'))
  log.lines.length = 0
  nodeAnswers = false
  // shop's home is on the node (reached through its agent); blog's on this box.
  const openHome: OpenHome = async (path, owner) => {
    if (path.endsWith('shop') && !nodeAnswers) throw new NodeUnreachableError('node node_b (10.0.0.3:7710) is not reachable: ECONNREFUSED')
    return openSiteHome(path, owner)
  }
  writer = new EdgeAccessLog({ homePath: async (slug) => join(dir, slug) }, log, openHome, { retryMs: 100 })
})
afterEach(async () => {
  nodeAnswers = true
  await writer.close()
  rmSync(dir, { recursive: true, force: true })
})

const logged = (slug: string) => {
  const file = join(dir, slug, 'logs', 'access.log')
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').map((l) => /GET (\S+)/.exec(l)?.[1]) : []
}

async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`)
    await writer.flush()
    await Bun.sleep(20)
  }
}

describe('the access log of a site on a node that does not answer', () => {
  it('keeps its lines, in order, and writes them once the node answers, without holding up other sites', async () => {
    mkdirSync(join(dir, 'shop'))
    mkdirSync(join(dir, 'blog'))
    for (const n of [1, 2, 3]) writer.write(site, request(n))
    writer.write(other, request(10))
    await writer.flush()
    expect(logged('shop')).toEqual([])
    expect(logged('blog')).toEqual(['/page/10'])
    expect(log.lines.some((l) => String(l.msg).startsWith("a site's node does not answer: its access log lines are kept") && l.site === 'shop')).toBe(true)

    writer.write(site, request(4))
    nodeAnswers = true
    await until('the kept lines written', () => logged('shop').length === 4)
    expect(logged('shop')).toEqual(['/page/1', '/page/2', '/page/3', '/page/4'])
    expect(log.lines.find((l) => String(l.msg).startsWith("wrote a site's access log lines kept"))).toMatchObject({ site: 'shop', lines: 4, dropped: 0 })
    writer.write(site, request(5))
    await until('the next line written', () => logged('shop').length === 5)
  })

  it('keeps at most MAX_PENDING_BYTES of a site, and counts the lines dropped beyond', async () => {
    mkdirSync(join(dir, 'shop'))
    const lineBytes = Buffer.byteLength(`203.0.113.9 - - [05/Nov/2026:07:03:04 +0000] "GET /page/10000 HTTP/1.1" 200 512 "-" "curl/8.5.0"\n`)
    const fits = Math.floor(MAX_PENDING_BYTES / lineBytes)
    for (let n = 10_000; n < 10_000 + fits + 50; n++) writer.write(site, request(n))
    await writer.flush()
    expect(writer.droppedLines('shop')).toBe(50)
    nodeAnswers = true
    await until('the kept lines written', () => logged('shop').length >= fits)
    expect(logged('shop')).toHaveLength(fits)
    expect(logged('shop')[0]).toBe('/page/10000')
    expect(log.lines.find((l) => String(l.msg).startsWith("wrote a site's access log lines kept"))).toMatchObject({ site: 'shop', lines: fits, dropped: 50 })
    expect(writer.droppedLines('shop')).toBe(0)
  })
})
