import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TarWriter } from '../src/drivers/sources/tar-writer'
import { checkerFor } from './helpers/answer-checker'
import { api, startBerth, type Berth } from './helpers/binary'
import { startGitServer, type GitServer } from './helpers/git-server'
import { hostileArchives } from './helpers/hostile-archives'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * Hostile trees end to end (issue 39): the compiled binary, one site on the real engine that
 * already serves a release, and every tree and repository an attacker would send: archives with
 * `..`, absolute names, links and devices (test/helpers/hostile-archives.ts, shared with the
 * driver's test), a zip bomb and archives larger than the site's free disk, git URLs to loopback,
 * private and metadata addresses or with transports Berth does not take, a repository with a
 * submodule. Each is refused with the API's envelope (status, code, param, a message naming the
 * member or the reason and what to do) or, for the submodule, a failed deployment saying why;
 * nothing is queued, nothing is written in the home outside ~/app, the live release keeps serving
 * and nothing is left in Berth's deploy-work/ folder.
 */
let berth: Berth
let git: GitServer
let site: { slug: string; key: string }
let live: string
const dir = mkdtempSync(join(tmpdir(), 'berth-hostile-'))
const made = hostileArchives(dir)
const MARKER = `kept ${crypto.randomUUID()}`

beforeAll(async () => {
  git = await startGitServer('hostil')
  berth = await startBerth({ env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour', BERTH_OUTBOUND_ALLOW_NETWORKS: git.network } })
  instanceOf(berth)
  const slug = uniqueSlug('hostile')
  const { data } = await buyDirect(berth.url, { sku: 'svc_starter_monthly', slug })
  expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
  site = { slug, key: data.api_key as string }
}, 180_000)
afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
  await git?.close()
  rmSync(dir, { recursive: true, force: true })
}, 90_000)

const call = (method: string, rest: string, body?: unknown) => api(berth.url, method, `/sites/${site.slug}/${rest}`, { key: site.key, body })

interface Envelope { status: number; error: { code: string; param: string | null; message: string; details?: Record<string, unknown> } }

async function upload(file: string | Uint8Array, type: string): Promise<Envelope> {
  const body = typeof file === 'string' ? Bun.file(file) : Buffer.from(file)
  const res = await fetch(`${berth.url}/api/v1/sites/${site.slug}/deploy/`, { method: 'POST', headers: { authorization: `Bearer ${site.key}`, 'content-type': type }, body })
  const text = await res.text()
  // The refusal must be one the published document describes, as every answer through api() is.
  const checker = await checkerFor(berth.url, async () => (await fetch(`${berth.url}/api/v1/openapi.json`)).json() as Promise<Record<string, any>>)
  checker.check('POST', `/api/v1/sites/${site.slug}/deploy/`, res.status, res.headers.get('content-type'), text)
  return { status: res.status, error: (JSON.parse(text) as { error: Envelope['error'] }).error }
}

async function finished(id: string) {
  const deadline = Date.now() + 120_000
  for (;;) {
    const d = (await call('GET', `deployments/${id}/`)).json.data
    if (d.status === 'succeeded' || d.status === 'failed') return d
    if (Date.now() > deadline) throw new Error(`deployment ${id} still ${d.status}`)
    await Bun.sleep(250)
  }
}

/** Every path of the home (types, not sizes), walked through the files API; ~/app and ~/logs (written by the site itself) apart. */
async function homeTree(path = ''): Promise<string[]> {
  const res = await call('GET', `files/?path=${encodeURIComponent(path || '.')}`)
  expect(res.status, res.text).toBe(200)
  const out: string[] = []
  for (const e of res.json.data.entries as { path: string; type: string }[]) {
    if (e.path === 'app' || e.path === 'logs') continue
    out.push(`${e.type} ${e.path}`)
    if (e.type === 'dir') out.push(...(await homeTree(e.path)))
  }
  return out
}

/** What waits in Berth's deploy-work/ folder (made at the first archive). */
const workFiles = () => (existsSync(join(berth.dataDir, 'deploy-work')) ? readdirSync(join(berth.dataDir, 'deploy-work')) : [])

/** What a refusal must have left as it was: the deployments, the home outside ~/app, the marker, the releases, the live site. */
async function state() {
  const releases = await call('GET', 'files/?path=app/releases')
  const marker = await call('GET', 'files/read/?path=marker.txt')
  return {
    deployments: (await call('GET', 'deployments/')).json.data.map((d: { id: string; status: string }) => `${d.id} ${d.status}`),
    home: await homeTree(),
    releases: releases.json.data.entries.map((e: { name: string }) => e.name),
    incoming: (await call('GET', 'files/?path=app/incoming')).json?.data?.entries?.length ?? 0,
    marker: marker.json.data.content,
    page: (await viaEdge(berth.url, site.slug, '/')).text,
    work: workFiles(),
  }
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

function expectEnvelope(r: Envelope, status: number, code: string, param: string, words: RegExp) {
  expect({ status: r.status, code: r.error?.code, param: r.error?.param }, JSON.stringify(r.error)).toEqual({ status, code, param })
  expect(r.error.message).toMatch(words)
}

describe('a site serving a release', () => {
  let before: Awaited<ReturnType<typeof state>>

  it('deploys a first release from git, beside a marker file in its home', async () => {
    expect((await call('POST', 'files/write/', { path: 'marker.txt', content: MARKER })).status).toBe(200)
    const repo = git.makeRepo('first', [{ files: { 'index.html': 'release one' } }])
    const res = await call('POST', 'deploy/', { source: { git: repo.http, ref: 'main' } })
    expect(res.status, res.text).toBe(200)
    const d = await finished(res.json.data.id)
    expect(d.status, d.output + d.error).toBe('succeeded')
    live = d.id
    before = await state()
    expect(before).toMatchObject({ releases: [live], marker: MARKER, page: 'release one', work: [] })
  }, 120_000)

  it('refuses archives with "..", absolute names, links out of the tree, devices and FIFOs: 422 UNSAFE_ARCHIVE naming the member, nothing queued or written', async () => {
    const up = made.fresh('up')
    mkdirSync(join(up, 'sub'), { recursive: true })
    writeFileSync(join(up, 'evil'), 'x')
    execFileSync('tar', ['-czPf', `${up}.tgz`, '-C', join(up, 'sub'), '../evil'])
    const cases: [file: string, type: string, member: string][] = [
      [`${up}.tgz`, 'application/gzip', 'member "../evil" climbs out with ".."'],
      [await made.craftedTar([['ok.txt', 'file', 'ok'], ['../../marker.txt', 'file', 'overwritten']]), 'application/gzip', 'member "../../marker.txt" climbs out'],
      [await made.craftedTar([['/home/site/marker.txt', 'file', 'overwritten']]), 'application/gzip', 'member "/home/site/marker.txt" is an absolute path'],
      [await made.craftedTar([['home', 'symbolic link', '/home/site'], ['home/evil.txt', 'file', 'x']]), 'application/gzip', 'member "home" is a symbolic link to the absolute path "/home/site"'],
      [made.gnuTar((root) => symlinkSync('../..', join(root, 'up'))), 'application/gzip', 'member "./up" is a symbolic link to "../..", which leads above the tree'],
      [await made.craftedTar([['passwd', 'hard link', '/etc/passwd']]), 'application/gzip', 'member "passwd" is a hard link to "/etc/passwd"'],
      [made.gnuTar((root) => execFileSync('mknod', [join(root, 'null'), 'c', '1', '3'])), 'application/gzip', 'member "./null" is a device'],
      [made.gnuTar((root) => execFileSync('mkfifo', [join(root, 'pipe')])), 'application/gzip', 'member "./pipe" is a FIFO'],
      [made.pyZip([['ok.txt', 'ok'], ['../../evil.sh', 'x']]), 'application/zip', 'member "../../evil.sh" climbs out with ".."'],
      [made.pyZip([['/home/site/evil', 'x']]), 'application/zip', 'member "/home/site/evil" is an absolute path'],
      [made.pyZip([['app/', ''], ['app/l', '../../../etc', 0o120777]]), 'application/zip', 'member "app/l" is a symbolic link to "../../../etc", which leads above the tree'],
    ]
    for (const [file, type, member] of cases) {
      const r = await upload(file, type)
      expectEnvelope(r, 422, 'UNSAFE_ARCHIVE', 'body', new RegExp(`^The archive was refused and nothing of it was deployed: ${escape(member)}.*Make the archive of the tree's own files only`))
    }
    const inJson = await call('POST', 'deploy/', { source: { archive_base64: readFileSync(cases[1][0]).toString('base64') } })
    expectEnvelope({ status: inJson.status, error: inJson.json.error }, 422, 'UNSAFE_ARCHIVE', 'source.archive_base64', /member "\.\.\/\.\.\/marker\.txt" climbs out/)
    const junk = await upload(new TextEncoder().encode('this is not an archive'), 'application/gzip')
    expectEnvelope(junk, 422, 'UNREADABLE_ARCHIVE', 'body', /not a gzip-compressed tar.*Send a tar\.gz/)
    expect(await state()).toEqual(before)
  }, 60_000)

  it('refuses git URLs to loopback, private and metadata addresses, other transports, plain http to a public host, a credential on the wrong transport, a ref that is an option and a secret it does not have: 422 with the field, nothing queued', async () => {
    const cases: [source: Record<string, string>, code: string, param: string, words: RegExp][] = [
      [{ git: 'http://127.0.0.1/x.git' }, 'BLOCKED_ADDRESS', 'source.git', /127\.0\.0\.1.*loopback/],
      [{ git: 'http://[::1]/x.git' }, 'BLOCKED_ADDRESS', 'source.git', /::1.*loopback/],
      [{ git: 'http://[::1]/' }, 'VALIDATION_ERROR', 'source.git', /names no repository.*give an https:\/\/ URL/],
      [{ git: 'http://10.1.2.3/x.git' }, 'BLOCKED_ADDRESS', 'source.git', /10\.1\.2\.3.*private.*allow_networks/],
      [{ git: 'http://169.254.169.254/latest/meta-data' }, 'BLOCKED_ADDRESS', 'source.git', /169\.254\.169\.254.*link-local/],
      [{ git: 'http://localhost/x.git' }, 'BLOCKED_ADDRESS', 'source.git', /localhost.*(127\.0\.0\.1|::1).*loopback/],
      [{ git: 'file:///etc' }, 'VALIDATION_ERROR', 'source.git', /over https:\/\/ and ssh:\/\/ only \(not file:\/\/\)/],
      [{ git: 'ext::sh' }, 'VALIDATION_ERROR', 'source.git', /remote helpers \(ext::, fd:: and the like\) are not taken/],
      [{ git: `http://${git.address}/first.git`, ref: '--upload-pack=touch%20/tmp/pwned' }, 'VALIDATION_ERROR', 'source.ref', /must be a branch, a tag or a full commit id.*not starting with "-"/],
      [{ git: 'http://93.184.216.34/x.git' }, 'VALIDATION_ERROR', 'source.git', /over http:\/\/ only from a network the hoster lists in outbound\.allow_networks; 93\.184\.216\.34 .*use https:\/\//],
      [{ git: `http://${git.address}/first.git`, token_secret: 'GIT_TOKEN' }, 'VALIDATION_ERROR', 'source.git', /A token is never sent over http:\/\/: use an https:\/\/ URL/],
      [{ git: 'https://93.184.216.34/x.git', ssh_key_secret: 'GIT_TOKEN' }, 'VALIDATION_ERROR', 'source.git', /A deploy key goes with an ssh:\/\/ or git@host:path URL/],
      [{ git: `http://${git.address}/first.git`, token_secret: 'NO_SUCH_SECRET' }, 'VALIDATION_ERROR', 'source.token_secret', /no secret named NO_SUCH_SECRET; set it first \(PATCH \/sites\/[^/]+\/env\/ with "secret"/],
    ]
    expect((await call('PATCH', 'env/', { variables: { GIT_TOKEN: 'tok' }, secret: ['GIT_TOKEN'] })).status).toBe(200)
    for (const [source, code, param, words] of cases) {
      const res = await call('POST', 'deploy/', { source })
      expectEnvelope({ status: res.status, error: res.json.error }, 422, code, param, words)
    }
    expect(await state()).toEqual(before)
  }, 60_000)

  it('through MCP, deploy_site with a git URL to a loopback address is an error result with the code', async () => {
    const client = new Client({ name: 'berth-hostile', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${berth.url}/mcp/`), { requestInit: { headers: { authorization: `Bearer ${site.key}` } } }))
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name)
      expect(tools).toContain('deploy_site')
      const result = (await client.callTool({ name: 'deploy_site', arguments: { tenant_slug: site.slug, source: { git: 'http://127.0.0.1/x.git' } } })) as { isError?: boolean; content: { text?: string }[] }
      expect(result.isError).toBe(true)
      expect(result.content[0].text).toMatch(/BLOCKED_ADDRESS/)
      expect(result.content[0].text).toMatch(/source\.git/)
      // An archive in base64, MCP's way to send one: refused alike, naming the field it came in.
      const archive_base64 = readFileSync(await made.craftedTar([['../../marker.txt', 'file', 'overwritten']])).toString('base64')
      const unsafe = (await client.callTool({ name: 'deploy_site', arguments: { tenant_slug: site.slug, source: { archive_base64 } } })) as { isError?: boolean; content: { text?: string }[] }
      expect(unsafe.isError).toBe(true)
      expect(unsafe.content[0].text).toMatch(/UNSAFE_ARCHIVE/)
      expect(unsafe.content[0].text).toMatch(/source\.archive_base64/)
      expect(unsafe.content[0].text).toMatch(/member \\?"\.\.\/\.\.\/marker\.txt\\?" climbs out/)
    } finally {
      await client.close()
    }
    expect(await state()).toEqual(before)
  }, 30_000)

  it('a repository with a submodule: the deployment fails saying why, the live release keeps serving', async () => {
    git.makeRepo('elsewhere', [{ files: { 'secret.txt': 'from elsewhere' } }])
    const repo = git.makeRepo('withsub', [{ files: { 'index.html': 'release two' }, submodule: { path: 'vendor/lib', repo: 'elsewhere' } }])
    const res = await call('POST', 'deploy/', { source: { git: repo.http } })
    expect(res.status, res.text).toBe(200)
    const d = await finished(res.json.data.id)
    expect(d.status).toBe('failed')
    expect(d.error).toMatch(/submodules \(\.gitmodules\), which Berth never fetches.*vendor their files/)
    const after = await state()
    expect(after).toMatchObject({ home: before.home, releases: [live], marker: MARKER, page: 'release one', work: [] })
    before = after
  }, 120_000)

  it('a repository with symbolic links out of its tree: the deployment fails naming them, nothing is written through them, the live release keeps serving', async () => {
    // .berth is where Berth writes the release's manifest: through this link it would land in the home.
    const repo = git.makeRepo('linksout', [{ files: { 'index.html': 'release three' }, links: { '.berth': '/home/site', 'public': '../../..', 'ok.html': 'index.html' } }])
    const res = await call('POST', 'deploy/', { source: { git: repo.http } })
    expect(res.status, res.text).toBe(200)
    const d = await finished(res.json.data.id)
    expect(d.status).toBe('failed')
    expect(d.error).toMatch(/^The tree holds symbolic links that leave the tree \(.*\): Berth deploys no link to files outside the release\. Make them relative links inside the tree/)
    expect(d.error).toContain('.berth -> /home/site')
    expect(d.error).toContain('public -> ../../..')
    expect(d.error).not.toMatch(/ok\.html/)
    const after = await state()
    expect(after).toMatchObject({ home: before.home, releases: [live], marker: MARKER, page: 'release one', work: [] })
    before = after
  }, 120_000)

  it("a zip bomb, a tar.gz bomb and an archive larger than the site's free disk: 507 DISK_FULL with the figures, nothing left in deploy-work/", async () => {
    // Leave the site 64 MiB free (fallocate is instant on its ext4 disk), then send more than that.
    const fill = await call('POST', 'exec/', { command: 'fallocate -l $(( $(df -B1 --output=avail /home/site | tail -1) - 64 * 1024 * 1024 )) /home/site/fill.bin' })
    expect(fill.json?.data?.exit_code, fill.text).toBe(0)
    try {
      const bomb = made.pyZip([['a.bin', { zeros: 100 << 20 }], ['b.bin', { zeros: 100 << 20 }]])
      expect(Bun.file(bomb).size).toBeLessThan(1 << 20)
      const headerBomb = join(dir, 'header-bomb.tar')
      const handle = await open(headerBomb, 'w')
      const w = new TarWriter(handle)
      await w.header('zeros.bin', 'file', 0o644, 10_000_000_000)
      await w.data(Buffer.alloc(4096))
      await handle.close()
      writeFileSync(`${headerBomb}.gz`, gzipSync(readFileSync(headerBomb)))
      // 96 MiB of random bytes in a tar.gz stored uncompressed: the upload itself is larger than the free disk.
      const big = made.fresh('big')
      mkdirSync(big)
      writeFileSync(join(big, 'random.bin'), randomBytes(96 << 20))
      execFileSync('tar', ['-cf', `${big}.tar`, '-C', big, '.'])
      writeFileSync(`${big}.tgz`, gzipSync(readFileSync(`${big}.tar`), { level: 0 }))
      for (const [file, type, words] of [[bomb, 'application/zip', /at least 104857600 bytes \(at member "a\.bin"\)/], [`${headerBomb}.gz`, 'application/gzip', /at least 10000000000 bytes \(at member "zeros\.bin"\)/], [`${big}.tgz`, 'application/gzip', /at least \d+ bytes, more than the \d+ bytes the site's disk has free/]] as const) {
        const r = await upload(file, type)
        expectEnvelope(r, 507, 'DISK_FULL', 'body', new RegExp(`^The tree expands to ${words.source}.*The site's disk has [\\d.]+ MB free; nothing was deployed\\. Delete files or scale`))
        expect(r.error.details).toMatchObject({ limit_bytes: expect.any(Number), used_bytes: expect.any(Number), available_bytes: expect.any(Number) })
        expect(r.error.details!.available_bytes as number).toBeLessThan(65 << 20)
        expect(workFiles()).toEqual([])
      }
    } finally {
      expect((await call('POST', 'files/delete/', { path: 'fill.bin' })).status).toBe(200)
    }
    expect(await state()).toEqual(before)
  }, 60_000)
})
