import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, lstatSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { hostHome, instanceOf, removeInstanceSites, siteShell } from './helpers/sites'

/**
 * The files API (issue 4, item 1) on the compiled binary and a real Docker engine: two purchased
 * static sites of two accounts. What it writes is served by the site at once; what a tenant
 * plants in its own container (symlinks to /etc/shadow, /proc/1/root, the host's files, the other
 * site's volume, a FIFO, /dev/zero) never leads Berth, which runs as root, out of the site's home.
 */
let berth: Berth
let site: { slug: string; key: string; home: string }
let other: { slug: string; key: string; home: string }
/** Host files that no file operation may change: a canary folder, /etc/shadow, the other site. */
let canaryDir: string

beforeAll(async () => {
  berth = await startBerth({ env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour' } })
  expect(instanceOf(berth)).toMatch(/^[0-9a-f]+$/)
  ;[site, other] = await Promise.all([buy('files'), buy('victim')])
  canaryDir = mkdtempSync(join(tmpdir(), 'berth-canary-'))
  writeFileSync(join(canaryDir, 'canary.txt'), randomBytes(32).toString('hex'))
}, 120_000)
afterAll(async () => {
  await berth?.stop()
  await removeInstanceSites(berth)
  await berth?.dispose()
  if (canaryDir) rmSync(canaryDir, { recursive: true, force: true })
})

async function buy(stem: string) {
  const slug = uniqueSlug(stem)
  const { data } = await buyDirect(berth.url, { sku: 'svc_starter_monthly', slug })
  expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
  return { slug, key: data.api_key as string, home: await hostHome(berth, slug) }
}

type Site = { slug: string; key: string }
const files = {
  list: (s: Site, path: string, key = s.key) => api(berth.url, 'GET', `/sites/${s.slug}/files/?path=${encodeURIComponent(path)}`, { key }),
  read: (s: Site, path: string, key = s.key) => api(berth.url, 'GET', `/sites/${s.slug}/files/read/?path=${encodeURIComponent(path)}`, { key }),
  write: (s: Site, path: string, content: string, key = s.key) => api(berth.url, 'POST', `/sites/${s.slug}/files/write/`, { key, body: { path, content } }),
  upload: (s: Site, path: string, bytes: Uint8Array, key = s.key) =>
    api(berth.url, 'POST', `/sites/${s.slug}/files/upload/`, { key, body: { path, content_b64: Buffer.from(bytes).toString('base64') } }),
  mkdir: (s: Site, path: string, key = s.key) => api(berth.url, 'POST', `/sites/${s.slug}/files/mkdir/`, { key, body: { path } }),
  delete: (s: Site, path: string, key = s.key) => api(berth.url, 'POST', `/sites/${s.slug}/files/delete/`, { key, body: { path } }),
}
const OPERATIONS = Object.keys(files) as (keyof typeof files)[]
const run = (op: keyof typeof files, s: Site, path: string, key = s.key) =>
  op === 'write' ? files.write(s, path, 'pwned', key) : op === 'upload' ? files.upload(s, path, Buffer.from('pwned'), key) : files[op](s, path, key)

/** A site's page as bytes, through Berth's edge. */
async function edgeBytes(slug: string, path: string) {
  const res = await fetch(`${berth.url}${path}`, { headers: { host: `${slug}.localhost:${berth.port}` } })
  return { status: res.status, type: res.headers.get('content-type'), bytes: new Uint8Array(await res.arrayBuffer()) }
}

/** A 1x1 PNG followed by 100 KB of noise (viewers stop at IEND; the bytes must survive as they are). */
const PNG = Buffer.concat([
  Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64'),
  randomBytes(100_000),
])

describe('content', () => {
  it('writes public/index.html, owned by the site user, and the edge serves it at once', async () => {
    const page = `<!doctype html><h1>written through the API ${randomBytes(6).toString('hex')}</h1>\n`
    const res = await files.write(site, 'public/index.html', page)
    expect(res.status).toBe(200)
    expect(res.json.data).toMatchObject({ name: 'index.html', path: 'public/index.html', type: 'file', size: Buffer.byteLength(page), created: false })
    expect((await viaEdge(berth.url, site.slug)).text).toBe(page)
    const shell = await siteShell(berth, site.slug, 'stat -c %u:%g:%a public/index.html && echo appended >> public/index.html')
    expect(shell).toEqual({ code: 0, output: '1000:1000:644\n' })
  })

  it('uploads a PNG as base64 (folders made on the way) and the edge returns it byte-identical', async () => {
    const res = await files.upload(site, 'public/img/logo.png', PNG)
    expect(res.status).toBe(200)
    expect(res.json.data).toMatchObject({ path: 'public/img/logo.png', size: PNG.length, created: true, mode: '0644' })
    const served = await edgeBytes(site.slug, '/img/logo.png')
    expect(served.status).toBe(200)
    expect(served.type).toContain('image/png')
    expect(Buffer.from(served.bytes).equals(PNG)).toBe(true)
    expect((await siteShell(berth, site.slug, 'stat -c %u:%g:%a public/img')).output).toBe('1000:1000:755\n')
  })

  it('reads 524,288 bytes of text; 524,289 bytes is 413; a binary file or NUL bytes are 415', async () => {
    const limit = 524_288
    expect((await files.write(site, 'big/at-limit.txt', 'a'.repeat(limit))).status).toBe(200)
    expect((await files.write(site, 'big/over-limit.txt', 'a'.repeat(limit + 1))).status).toBe(200)
    expect((await files.write(site, 'big/nul.txt', 'a\u0000b')).status).toBe(200)
    const ok = await files.read(site, 'big/at-limit.txt')
    expect(ok.status).toBe(200)
    expect(ok.json.data.content.length).toBe(limit)
    expect(ok.json.data).toMatchObject({ size: limit, type: 'file' })
    const over = await files.read(site, 'big/over-limit.txt')
    expect([over.status, over.json.error.code, over.json.error.param]).toEqual([413, 'PAYLOAD_TOO_LARGE', 'path'])
    for (const path of ['public/img/logo.png', 'big/nul.txt']) {
      const binary = await files.read(site, path)
      expect([binary.status, binary.json.error.code, binary.json.error.param]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE', 'path'])
    }
    const text = await files.read(site, 'public/index.html')
    expect(text.json.data.content).toMatch(/written through the API .*\nappended\n$/s)
  })

  it('lists a folder: sorted entries with type, size, time and mode; never follows a symlink', async () => {
    await siteShell(berth, site.slug, 'mkdir -p listing/sub && echo hi > listing/a.txt && ln -s /etc listing/link')
    const res = await files.list(site, 'listing/')
    expect(res.status).toBe(200)
    expect(res.json.data.path).toBe('listing')
    expect(res.json.data.truncated).toBe(false)
    expect(res.json.data.entries.map((e: any) => [e.name, e.path, e.type])).toEqual([
      ['a.txt', 'listing/a.txt', 'file'],
      ['link', 'listing/link', 'symlink'],
      ['sub', 'listing/sub', 'dir'],
    ])
    const file = res.json.data.entries[0]
    expect(file).toMatchObject({ size: 3, mode: '0644' })
    expect(Date.now() - Date.parse(file.modified_at)).toBeLessThan(60_000)
    const home = await files.list(site, '')
    expect(home.json.data.entries.map((e: any) => e.name)).toEqual(expect.arrayContaining(['public', 'logs', 'listing']))
    expect((await files.list(site, 'public/index.html')).status).toBe(422)
    expect((await files.list(site, 'nothing-here')).json.error).toMatchObject({ code: 'NOT_FOUND', param: 'path' })
  })

  it('mkdir makes missing parents and is idempotent; delete removes a tree; the home cannot be deleted', async () => {
    const made = await files.mkdir(site, 'tree/a/b')
    expect(made.status).toBe(200)
    expect(made.json.data).toMatchObject({ path: 'tree/a/b', type: 'dir', created: true, mode: '0755' })
    expect((await files.mkdir(site, 'tree/a/b')).json.data.created).toBe(false)
    expect((await files.mkdir(site, 'public/index.html')).json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'path' })
    await files.write(site, 'tree/a/b/f.txt', 'x')
    await siteShell(berth, site.slug, 'ln -s /etc tree/a/etc && ln -s ../../public tree/pub')
    const deleted = await files.delete(site, 'tree')
    expect(deleted.json.data).toEqual({ path: 'tree', type: 'dir', removed: 6 })
    expect((await files.list(site, 'tree')).status).toBe(404)
    expect((await viaEdge(berth.url, site.slug)).status).toBe(200)
    for (const root of ['', '.', './']) {
      const res = await files.delete(site, root)
      expect([res.status, res.json.error.param]).toEqual([422, 'path'])
    }
    expect((await files.delete(site, 'tree')).json.error).toMatchObject({ code: 'NOT_FOUND', param: 'path' })
    expect((await files.delete(site, 'big/nul.txt')).json.data).toEqual({ path: 'big/nul.txt', type: 'file', removed: 1 })
  })
})

describe('limits and bad input', () => {
  it('write takes 1 MiB of content and upload 10 MiB decoded; one byte more is 413 naming the field', async () => {
    expect((await files.write(site, 'limits/one-mib.txt', 'w'.repeat(1_048_576))).status).toBe(200)
    const write = await files.write(site, 'limits/too-big.txt', 'w'.repeat(1_048_577))
    expect([write.status, write.json.error.code, write.json.error.param]).toEqual([413, 'PAYLOAD_TOO_LARGE', 'content'])
    const upload = await files.upload(site, 'limits/ten-mib.bin', randomBytes(10_485_760))
    expect([upload.status, upload.json.data?.size]).toEqual([200, 10_485_760])
    const over = await files.upload(site, 'limits/too-big.bin', randomBytes(10_485_761))
    expect([over.status, over.json.error.param]).toEqual([413, 'content_b64'])
    // A body far past any file limit stops at the body parser, still naming the field.
    const huge = await api(berth.url, 'POST', `/sites/${site.slug}/files/upload/`, { key: site.key, body: { path: 'x', content_b64: 'A'.repeat(20_000_000) } })
    expect([huge.status, huge.json.error.param]).toEqual([413, 'content_b64'])
    expect((await files.list(site, 'limits')).json.data.entries.map((e: any) => e.name)).toEqual(['one-mib.txt', 'ten-mib.bin'])
    await files.delete(site, 'limits')
  })

  it('refuses bad bodies and queries with 422 naming the parameter', async () => {
    const post = (op: string, body: unknown) => api(berth.url, 'POST', `/sites/${site.slug}/files/${op}/`, { key: site.key, body })
    const cases: [Promise<{ status: number; json: any }>, string][] = [
      [post('write', {}), 'path'],
      [post('write', { path: 'x.txt' }), 'content'],
      [post('write', { path: 7, content: 'x' }), 'path'],
      [post('write', { path: 'x.txt', content: { html: 1 } }), 'content'],
      [post('write', { path: 'x.txt', content: 'x', mode: '0777' }), 'mode'],
      [post('upload', { path: 'x.bin' }), 'content_b64'],
      [post('upload', { path: 'x.bin', content_b64: 'not base64!' }), 'content_b64'],
      [post('upload', { path: 'x.bin', content_b64: 'QUJD\nREVG' }), 'content_b64'],
      [post('upload', { path: 'x.bin', content_b64: 'QUJDRA=' }), 'content_b64'],
      [post('mkdir', {}), 'path'],
      [post('mkdir', { path: null }), 'path'],
      [post('mkdir', { path: '' }), 'path'],
      [post('delete', { path: ['a'] }), 'path'],
      [post('delete', { path: 'a', recursive: true }), 'recursive'],
      [post('write', { path: '', content: 'x' }), 'path'],
      [api(berth.url, 'GET', `/sites/${site.slug}/files/read/`, { key: site.key }), 'path'],
      [api(berth.url, 'GET', `/sites/${site.slug}/files/?dir=public`, { key: site.key }), 'dir'],
      [api(berth.url, 'GET', `/sites/${site.slug}/files/read/?path=public/img`, { key: site.key }), 'path'],
    ]
    for (const [pending, param] of cases) {
      const res = await pending
      expect([res.status, res.json.error.code, res.json.error.param], JSON.stringify(res.json.error)).toEqual([422, 'VALIDATION_ERROR', param])
    }
  })

  it("another account's key gets 404 on every file route, and nothing changes", async () => {
    const before = snapshot(site.home)
    for (const op of OPERATIONS) {
      const res = await run(op, site, 'public/index.html', other.key)
      expect([op, res.status, res.json.error.code, res.json.error.param]).toEqual([op, 404, 'NOT_FOUND', 'tenant_slug'])
    }
    expect(snapshot(site.home)).toEqual(before)
  })

  it('a read-only key can list and read but not change files (403)', async () => {
    const created = await api(berth.url, 'POST', '/keys/create/', { key: site.key, body: { name: 'reader', scopes: ['read'] } })
    const reader = created.json.data.api_key as string
    expect((await files.read(site, 'public/index.html', reader)).status).toBe(200)
    for (const op of ['write', 'upload', 'mkdir', 'delete'] as const) expect((await run(op, site, 'public/x.txt', reader)).status).toBe(403)
  })
})

describe('hostile paths', () => {
  it('every path of the table answers 4xx within 2 s on all six operations, and nothing outside the home changes', async () => {
    const canaryFile = join(canaryDir, 'canary.txt')
    // What a tenant with a shell can plant in its own home. The targets are host paths too:
    // meaningless inside the container, fatal if Berth followed them on the host.
    const planted = await siteShell(berth, site.slug, [
      'cd public',
      'ln -s /etc/shadow shadow',
      'ln -s /proc/1/root proc-root',
      'ln -s / root',
      `ln -s ${canaryFile} canary`,
      `ln -s ${canaryDir} canary-dir`,
      `ln -s ${other.home}/public/index.html other`,
      `ln -s ${other.home}/public other-dir`,
      'ln -s ../../../../../.. up',
      'ln -s /dev/zero zero',
      'ln -s /proc/self/fd/0 stdin',
      'mkfifo fifo',
      'cd ..',
      'ln -s / evil',
      'ln -s /etc etc',
    ].join(' && '))
    expect(planted.code, planted.output).toBe(0)

    const HOSTILE: string[] = [
      // `..` escapes
      '..', '../', '../../../../etc/passwd', 'public/../../etc/shadow', 'public/..', './../x', 'public/./../../..', `../${other.slug}`,
      // absolute paths
      '/', '/etc/passwd', '//etc/shadow', canaryFile, `${other.home}/public/index.html`,
      // percent-encoded and double-encoded traversals
      '%2e%2e/%2e%2e/etc/passwd', '%2E%2E%2F%2E%2E%2Fetc%2Fpasswd', '..%2f..%2fetc%2fshadow', 'public%2f..%2f..%2fetc', '%252e%252e%252fetc%252fpasswd', '%25252e%25252e/etc', '%c0%ae%c0%ae/etc',
      // NUL and control characters, backslashes
      'public/index.html\u0000.txt', '\u0000', '..\u0000/etc', 'public/\n../../etc', '\r\n', '\u001b[2J', '..\\..\\etc\\passwd', 'public\\..\\..\\etc',
      // too long: 4,097 bytes (ASCII, and 2,049 two-byte characters)
      'a'.repeat(4097), 'é'.repeat(2049),
      // Unicode look-alikes of . / \
      '\uff0e\uff0e/\uff0e\uff0e/etc/passwd', '\u2024\u2024/etc', '..\u2215..\u2215etc', '\uff0e\uff0e\uff0fetc\uff0fpasswd', '\u2025/etc', '\ufe52\ufe52/etc', 'public\uff3c..\uff3c..', '..\u2216..\u2216etc',
      // symlinks planted in the container
      'public/shadow', 'public/proc-root', 'public/proc-root/etc/hostname', 'public/root', 'public/root/etc/passwd', 'public/canary', 'public/canary-dir',
      'public/canary-dir/canary.txt', 'public/canary-dir/new.txt', 'public/other', 'public/other-dir', 'public/other-dir/index.html', 'public/other-dir/new.html',
      'public/up/etc/passwd', 'public/zero', 'public/stdin', 'evil', 'evil/etc/passwd', 'etc/shadow',
      // a FIFO
      'public/fifo',
    ]
    expect(HOSTILE.length).toBeGreaterThanOrEqual(40)

    const watched = () => ({ canary: snapshot(canaryDir), other: snapshot(other.home), shadow: sha256(readFileSync('/etc/shadow')) })
    const before = watched()
    const failures: string[] = []
    for (const path of HOSTILE) {
      for (const op of OPERATIONS) {
        const started = performance.now()
        const res = await run(op, site, path)
        const ms = performance.now() - started
        const verdict = res.status >= 400 && res.status < 500 && ms < 2000 && (res.status !== 422 || res.json.error.param === 'path')
        if (!verdict) failures.push(`${op} ${JSON.stringify(path).slice(0, 60)}: ${res.status} in ${ms.toFixed(0)} ms ${res.text.slice(0, 200)}`)
      }
    }
    expect(failures).toEqual([])
    expect(watched()).toEqual(before)
    // The traps are still there (delete refused them) and the site still serves.
    for (const name of ['public/shadow', 'public/root', 'evil']) expect(lstatSync(join(site.home, name)).isSymbolicLink()).toBe(true)
    expect((await viaEdge(berth.url, site.slug)).status).toBe(200)
  }, 120_000)
})

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex')

/** Every entry under `dir` (not following symlinks) with its type and, for files, sha256. */
function snapshot(dir: string, prefix = ''): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name)
    const st = lstatSync(path)
    const key = `${prefix}${name}`
    if (st.isDirectory()) {
      out[`${key}/`] = 'dir'
      Object.assign(out, snapshot(path, `${key}/`))
    } else out[key] = st.isFile() ? sha256(readFileSync(path)) : st.isSymbolicLink() ? 'symlink' : 'other'
  }
  return out
}
