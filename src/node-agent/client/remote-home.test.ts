import { execFileSync } from 'node:child_process'
import { chownSync, chmodSync, existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeEach, describe, expect, it } from 'vitest'
import { FilesService } from '../../domain/files/service'
import { tailLines } from '../../domain/logs/tail'
import { nodeHomes } from '../../drivers/cluster/node-homes'
import { nodeHomePath, type ClusterNode, type NodeLink } from '../../drivers/cluster/types'
import { gnuTar, scanTar } from '../../drivers/archives/home-tar'
import { SiteNotRunnableError, type ContainerRuntime } from '../../drivers/runtime/types'
import { measureDiskUsage } from '../../drivers/files/disk-usage'
import { entryExists } from '../../drivers/files/entry'
import { FileError } from '../../drivers/files/errors'
import { matchRoute } from '../contract/check'
import { agentHandlers } from '../server/api'
import type { Forwards } from '../server/forwards'
import { HOMES_MAX_REQUEST_BODY } from '../server/home-agent'
import { routeAgentRequest } from '../server/router'
import { openSiteHome } from '../../drivers/files/home'
import { HostSiteFiles } from '../../drivers/files/site-reader'
import type { Home } from '../../drivers/files/types'

/**
 * A site's home on another node, through its agent: the agent's handler served by a real
 * Bun.serve on loopback (plain HTTP here: the link's mutual TLS is the nodes' own test), the
 * control plane's node-aware drivers on one side, the same operations on a local copy of the
 * same home on the other. Every answer and every error must be the same.
 */
const OWNER = { uid: 1000, gid: 1000 }
const root = mkdtempSync(join(tmpdir(), 'berth-remote-home-'))
const localDir = join(root, 'local')
const remoteDir = join(root, 'remote')
const outside = join(root, 'outside')
const NODE: ClusterNode = {
  id: 'n1', name: 'worker', address: '127.0.0.1', agentPort: 0, swarmNodeId: null, certFingerprint: '', certSerial: '', state: 'active',
  memoryBytes: 0, cpus: 1, joinedAt: 0, lastSeenAt: null,
}
/** The volumes the agent knows: name → folder. */
const volumes = new Map<string, string>([['berth-test-acme-home', remoteDir]])
let requests = 0
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  maxRequestBodySize: HOMES_MAX_REQUEST_BODY,
  fetch(req) {
    requests++
    return routeAgentRequest(agent, req)
  },
})
const agent = agentHandlers({ info: () => Promise.reject(new Error('not in this test')), forwards: {} as Forwards, homes: async (volume) => volumes.get(volume) ?? null })
const link: NodeLink = {
  fetch: (node, path, init) => fetch(`http://127.0.0.1:${server.port}${path}`, init),
  engineOptions: () => {
    throw new Error('not in this test')
  },
}
const homes = nodeHomes({ link, node: (id) => (id === NODE.id ? NODE : null) })
const remotePath = nodeHomePath(NODE.id, 'berth-test-acme-home')

afterAll(() => {
  server.stop(true)
  rmSync(root, { recursive: true, force: true })
})

/** The same home twice: files of every kind, and a tenant's traps (links out, a FIFO, a link planted where a log goes). */
function makeHome(dir: string) {
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(join(dir, 'public', 'css'), { recursive: true })
  mkdirSync(join(dir, 'logs'))
  writeFileSync(join(dir, 'public', 'index.html'), '<h1>hello</h1>')
  writeFileSync(join(dir, 'public', 'css', 'site.css'), 'body{}')
  writeFileSync(join(dir, 'binary.bin'), Buffer.from([1, 0, 2]))
  writeFileSync(join(dir, 'latin1.txt'), Buffer.from([0xe9]))
  writeFileSync(join(dir, 'big.txt'), 'x'.repeat(5000))
  // A log past the first window a remote read fetches (64 KiB): its older lines come by range.
  writeFileSync(join(dir, 'logs', 'access.log'), Array.from({ length: 4000 }, (_, i) => `line ${i} ${'y'.repeat(40)}\n`).join(''))
  symlinkSync(join(outside, 'canary.txt'), join(dir, 'logs', 'error.log'))
  symlinkSync(outside, join(dir, 'public', 'escape'))
  symlinkSync('public', join(dir, 'link-in'))
  execFileSync('mkfifo', [join(dir, 'pipe')])
  writeFileSync(join(dir, 'deploy.sh'), 'echo hi')
  symlinkSync('/etc/passwd', join(dir, 'hook-link'))
}

beforeEach(() => {
  rmSync(outside, { recursive: true, force: true })
  mkdirSync(outside)
  writeFileSync(join(outside, 'canary.txt'), 'canary')
  makeHome(localDir)
  makeHome(remoteDir)
})

/** What an operation answered, or threw: class, FileError problem and next step, node `code`, message. */
async function outcome(fn: () => unknown): Promise<unknown> {
  try {
    return { ok: strip(await fn()) }
  } catch (err) {
    const e = err as Error & { code?: string }
    return { error: e.constructor.name, problem: err instanceof FileError ? err.problem : undefined, next: err instanceof FileError ? err.next : undefined, code: e.code, message: e.message.replaceAll(localDir, 'HOME').replaceAll(remoteDir, 'HOME') }
  }
}

/** Modification times differ between the two copies; everything else must not. */
function strip(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(strip)
  if (value && typeof value === 'object' && !(value instanceof Uint8Array)) {
    return Object.fromEntries(Object.entries(value).filter(([k]) => k !== 'modified_at' && k !== 'mtimeMs').map(([k, v]) => [k, strip(v)]))
  }
  return value
}

/** Runs `op` on the local home and on the remote one, and expects the same outcome; returns it. */
async function same(op: (home: Home) => unknown): Promise<unknown> {
  const local = await openSiteHome(localDir, OWNER)
  const remote = await homes.openHome(remotePath, OWNER)
  try {
    const [a, b] = [await outcome(() => op(local)), await outcome(() => op(remote))]
    expect(b).toEqual(a)
    return a
  } finally {
    local.close()
    remote.close()
  }
}

/** Every entry of a tree: path, type, mode, owner, content or link target. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const path = rel ? `${rel}/${name}` : name
      const st = lstatSync(join(dir, path))
      const what = st.isSymbolicLink() ? `-> ${readlinkSync(join(dir, path))}` : st.isFile() ? readFileSync(join(dir, path)).toString('base64') : st.isDirectory() ? 'dir' : 'other'
      out[path] = `${(st.mode & 0o7777).toString(8)} ${st.uid}:${st.gid} ${what}`
      if (st.isDirectory()) walk(path)
    }
  }
  walk('')
  return out
}

const HOSTILE = ['..', '../outside/canary.txt', 'public/../../outside', '/etc/passwd', 'public/escape', 'public/escape/canary.txt', 'link-in/index.html', 'logs/error.log', 'public/index.html/x', '%2e%2e/x', 'a\u0000b', 'pipe', 'nope', 'nope/deeper', '']

describe('a home on a node answers as the same home here', () => {
  it.each(HOSTILE)('list, folder, read and openForReading of %j', async (path) => {
    await same((h) => h.list(path, 100))
    await same((h) => h.folder(path))
    await same((h) => h.read(path, 100_000))
    await same(async (h) => {
      const file = await h.openForReading(path)
      try {
        return (await tailLines(file, { lines: 3 })).join('|')
      } finally {
        await file.close()
      }
    })
  })

  it.each(HOSTILE)('write, append, mkdir and remove of %j', async (path) => {
    await same((h) => h.write(path, Buffer.from('evil')))
    await same((h) => h.append(path, Buffer.from('evil\n')))
    await same((h) => h.mkdir(path))
    await same((h) => h.remove(path))
    expect(tree(remoteDir)).toEqual(tree(localDir))
    expect(readdirSync(outside)).toEqual(['canary.txt'])
    expect(readFileSync(join(outside, 'canary.txt'), 'utf8')).toBe('canary')
  })

  it('lists, reads and refuses content alike (truncated listings, too large, not text, FIFOs, folders)', async () => {
    expect(await same((h) => h.list('', 3))).toMatchObject({ ok: { truncated: true } })
    expect(await same((h) => h.list('public', 100))).toMatchObject({ ok: { path: 'public' } })
    expect(await same((h) => h.read('public/index.html', 100))).toMatchObject({ ok: { content: '<h1>hello</h1>', type: 'file' } })
    expect(await same((h) => h.read('big.txt', 100))).toMatchObject({ error: 'FileError', problem: 'too_large' })
    expect(await same((h) => h.read('binary.bin', 100))).toMatchObject({ problem: 'not_text' })
    expect(await same((h) => h.read('latin1.txt', 100))).toMatchObject({ problem: 'not_text' })
    expect(await same((h) => h.read('public', 100))).toMatchObject({ problem: 'wrong_type', next: { op: 'list', path: 'public' } })
    expect(await same((h) => h.folder('public/css/'))).toEqual({ ok: 'public/css' })
    expect(await same((h) => h.list('public/index.html', 10))).toMatchObject({ problem: 'wrong_type', next: { op: 'read' } })
  })

  it('writes, appends, makes and removes alike, as the site user, with the same modes', async () => {
    await same((h) => h.write('public/new/deep/page.html', Buffer.from('<p>new</p>')))
    chmodSync(join(localDir, 'public', 'index.html'), 0o600)
    chmodSync(join(remoteDir, 'public', 'index.html'), 0o600)
    expect(await same((h) => h.write('public/index.html', Buffer.from('replaced')))).toMatchObject({ ok: { created: false, mode: '0600' } })
    // Binary, every byte value, as an upload sends it.
    const bytes = Buffer.from(Array.from({ length: 256 * 64 }, (_, i) => i % 256))
    await same((h) => h.write('public/img.bin', bytes))
    await same((h) => h.append('logs/edge.log', Buffer.from('one\n')))
    await same((h) => h.append('logs/edge.log', Buffer.from('two\n')))
    await same((h) => h.mkdir('a/b/c'))
    expect(await same((h) => h.mkdir('a/b/c'))).toMatchObject({ ok: { created: false } })
    expect(await same((h) => h.mkdir('public/index.html'))).toMatchObject({ problem: 'wrong_type', next: { op: 'delete' } })
    expect(await same((h) => h.remove('public/css'))).toEqual({ ok: { path: 'public/css', type: 'dir', removed: 2 } })
    expect(tree(remoteDir)).toEqual(tree(localDir))
    expect(readFileSync(join(remoteDir, 'public', 'img.bin'))).toEqual(bytes)
    expect(lstatSync(join(remoteDir, 'logs', 'edge.log')).uid).toBe(1000)
  })

  it('reads a log by ranges: the tail, lines far back, and a search, as tailLines reads it here', async () => {
    const requestsBefore = requests
    const tail = await same(async (h) => {
      const file = await h.openForReading('logs/access.log')
      try {
        return await tailLines(file, { lines: 5 })
      } finally {
        await file.close()
      }
    })
    expect(tail).toMatchObject({ ok: ['line 3995 ' + 'y'.repeat(40), expect.any(String), expect.any(String), expect.any(String), 'line 3999 ' + 'y'.repeat(40)] })
    // The newest lines are in the first window: one request opens, the agent saw one more (the home's open).
    expect(requests - requestsBefore).toBe(2)
    await same(async (h) => {
      const file = await h.openForReading('logs/access.log')
      try {
        return await tailLines(file, { lines: 3, keep: (l) => l.startsWith('line 12 ') || l.startsWith('line 7 '), chunkBytes: 10_000 })
      } finally {
        await file.close()
      }
    })
  })

  it('a volume the node does not have fails to open as a missing folder does here (ENOENT)', async () => {
    const local = await outcome(() => openSiteHome(join(root, 'gone'), OWNER))
    const remote = await outcome(() => homes.openHome(nodeHomePath(NODE.id, 'berth-test-gone-home'), OWNER))
    expect(local).toMatchObject({ code: 'ENOENT' })
    expect(remote).toMatchObject({ code: 'ENOENT' })
    await expect(homes.openHome(nodeHomePath('unknown-node', 'v'), OWNER)).rejects.toThrow(/not part of the cluster/)
  })

  it('the files service answers a remote site with the same status, code, param and message', async () => {
    const service = (home: string) => new FilesService({ homePath: async () => home } as unknown as ContainerRuntime, { beginChange: () => () => {} }, homes.openHome)
    const site = { id: 's1', slug: 'acme' } as never
    const local = service(localDir)
    const remote = service(remotePath)
    const cases: ((s: FilesService) => Promise<unknown>)[] = [
      (s) => s.read(site, '../etc/passwd'),
      (s) => s.read(site, 'public/escape/canary.txt'),
      (s) => s.read(site, 'nope.html'),
      (s) => s.read(site, 'public'),
      (s) => s.list(site, 'public/index.html'),
      (s) => s.write(site, { path: 'public', content: 'x' }),
      (s) => s.upload(site, { path: 'public/escape/x.bin', content_b64: 'AAEC' }),
      (s) => s.delete(site, { path: '' }),
      (s) => s.mkdir(site, { path: 'deploy.sh/x' }),
      (s) => s.read(site, 'public/index.html'),
    ]
    for (const run of cases) {
      const [a, b] = [await outcome(() => run(local)), await outcome(() => run(remote))]
      expect(b).toEqual(a)
    }
    const missing = service(nodeHomePath(NODE.id, 'berth-test-gone-home'))
    await expect(missing.list(site, '')).rejects.toBeInstanceOf(SiteNotRunnableError)
  })
})

describe('archives of a home on a node', () => {
  /** A home with owners, modes, symlinks (in and out), a hard link, an empty folder, logs and .ssh. */
  function archiveHome(dir: string) {
    rmSync(dir, { recursive: true, force: true })
    mkdirSync(join(dir, 'public', 'empty'), { recursive: true })
    mkdirSync(join(dir, 'logs'))
    mkdirSync(join(dir, '.ssh'))
    writeFileSync(join(dir, 'public', 'index.php'), '<?php echo 1;')
    writeFileSync(join(dir, 'public', 'secret.txt'), 'only the owner')
    writeFileSync(join(dir, 'run.sh'), '#!/bin/sh\n')
    writeFileSync(join(dir, 'big.bin'), Buffer.alloc(3 * 1024 * 1024, 7))
    writeFileSync(join(dir, 'logs', 'access.log'), 'kept log')
    writeFileSync(join(dir, '.ssh', 'authorized_keys'), 'key')
    linkSync(join(dir, 'public', 'index.php'), join(dir, 'public', 'hard.php'))
    symlinkSync('index.php', join(dir, 'public', 'alias.php'))
    symlinkSync('/etc/passwd', join(dir, 'out-link'))
    chmodSync(join(dir, 'public', 'secret.txt'), 0o600)
    chmodSync(join(dir, 'run.sh'), 0o755)
    chmodSync(join(dir, 'public', 'empty'), 0o700)
    chownSync(join(dir, 'public'), 1000, 1000)
    chownSync(join(dir, 'public', 'index.php'), 1000, 1000)
    chownSync(join(dir, 'run.sh'), 33, 44)
  }

  it('tarHome on the node gives the archive tar gives here; replaceHome there restores bytes, modes, owners, links', async () => {
    archiveHome(remoteDir)
    const original = tree(remoteDir)
    const here = join(root, 'here.tar')
    const there = join(root, 'there.tar')
    await gnuTar.tarHome(remoteDir, here, ['.ssh'])
    await homes.tar.tarHome(remotePath, there, ['.ssh'])
    expect(readFileSync(there).equals(readFileSync(here))).toBe(true)
    expect(await homes.tar.scanTar(there)).toEqual(await scanTar(here))

    // The tenant changes everything; the restore puts it back, keeping logs/ and .ssh as they are now.
    rmSync(join(remoteDir, 'public'), { recursive: true })
    writeFileSync(join(remoteDir, 'added.txt'), 'added')
    writeFileSync(join(remoteDir, 'logs', 'access.log'), 'newer log')
    writeFileSync(join(remoteDir, '.ssh', 'authorized_keys'), 'newer key')
    await homes.tar.replaceHome(remotePath, there, ['.ssh'])
    expect(tree(remoteDir)).toEqual({ ...original, 'logs/access.log': tree(remoteDir)['logs/access.log'], '.ssh/authorized_keys': tree(remoteDir)['.ssh/authorized_keys'] })
    expect(readFileSync(join(remoteDir, 'logs', 'access.log'), 'utf8')).toBe('newer log')
    expect(readFileSync(join(remoteDir, '.ssh', 'authorized_keys'), 'utf8')).toBe('newer key')
    expect(lstatSync(join(remoteDir, 'public', 'hard.php')).ino).toBe(lstatSync(join(remoteDir, 'public', 'index.php')).ino)
    // No upload left behind next to the home.
    expect(readdirSync(root).filter((n) => n.startsWith('.berth-home-'))).toEqual([])
  })

  it('a tar that fails on the node fails here, and a broken archive is left here in no file', async () => {
    volumes.set('berth-test-broken-home', join(root, 'no-such-folder'))
    const out = join(root, 'broken.tar')
    await expect(homes.tar.tarHome(nodeHomePath(NODE.id, 'berth-test-broken-home'), out)).rejects.toThrow(/tar --create failed/)
    // An archive cut short in the middle (the agent's tar died): the read fails, no partial file stays.
    const cut = Bun.serve({
      hostname: '127.0.0.1', port: 0,
      fetch() {
        let n = 0
        return new Response(new ReadableStream({ pull(c) { if (n++ < 3) c.enqueue(new Uint8Array(65536)); else c.error(new Error('tar died')) } }))
      },
    })
    try {
      const cutHomes = nodeHomes({ link: { ...link, fetch: (_, path, init) => fetch(`http://127.0.0.1:${cut.port}${path}`, init) }, node: () => NODE })
      await expect(cutHomes.tar.tarHome(remotePath, out)).rejects.toThrow(/cut short/)
      expect(existsSync(out)).toBe(false)
    } finally {
      cut.stop(true)
    }
    // A replace with a broken archive keeps the files and says why: refused before tar runs
    // (drivers/archives/tar-members.ts), or failed in tar (a member cut short).
    writeFileSync(join(root, 'junk.tar'), 'not a tar at all')
    const before = tree(remoteDir)
    await expect(homes.tar.replaceHome(remotePath, join(root, 'junk.tar'))).rejects.toThrow(/archive was refused .*cut short at byte 0/)
    expect(tree(remoteDir)).toEqual(before)
    mkdirSync(join(root, 'small'))
    writeFileSync(join(root, 'small', 'f'), 'x'.repeat(2000))
    await gnuTar.tarHome(join(root, 'small'), join(root, 'cut.tar'))
    truncateSync(join(root, 'cut.tar'), 1536)
    await expect(homes.tar.replaceHome(remotePath, join(root, 'cut.tar'))).rejects.toThrow(/tar --extract failed/)
    expect(tree(remoteDir)).toEqual(before)
    // Names to keep are single names at the root, checked before anything is sent.
    await expect(homes.tar.tarHome(remotePath, out, ['../x'])).rejects.toBeInstanceOf(FileError)
  })
})

describe('usage, entries and the modules reader of a home on a node', () => {
  it('measures the same disk usage', async () => {
    expect(await homes.measureDisk(remotePath)).toEqual(await measureDiskUsage(remoteDir))
    expect(await homes.measureDisk(localDir)).toEqual(await measureDiskUsage(localDir))
  })

  it('finds a deploy hook alike (a symlink counts, never followed)', async () => {
    for (const name of ['deploy.sh', 'hook-link', 'missing.sh']) {
      expect(await homes.entryExists(remotePath, name)).toBe(await entryExists(localDir, name))
    }
  })

  it('reads for the modules alike: listings, stats, reads, nulls for links; a missing volume is not runnable', async () => {
    const local = new HostSiteFiles(async () => localDir)
    const remote = homes.siteFiles(async () => remotePath)
    const look = (files: HostSiteFiles) => files.read('acme', async (r) => strip([
      await r.list(''), await r.list('public', 1), await r.list('public/escape'), await r.stat('public/index.html'), await r.stat('public/escape'),
      await r.stat('pipe'), await r.read('big.txt', 10), await r.read('binary.bin', 100), await r.read('public/escape/canary.txt', 100), await r.read('nope', 1),
    ]))
    const [a, b] = [await look(local), await look(remote)]
    expect(b).toEqual(a)
    expect(await outcome(() => remote.read('acme', (r) => r.list('../x')))).toEqual(await outcome(() => local.read('acme', (r) => r.list('../x'))))
    const gone = homes.siteFiles(async () => nodeHomePath(NODE.id, 'berth-test-gone-home'))
    await expect(gone.read('acme', () => 1)).rejects.toBeInstanceOf(SiteNotRunnableError)
  })
})

describe("the agent's homes routes", () => {
  it('name a volume by its Docker name only', () => {
    expect(matchRoute('POST', '/v1/homes/berth-x-acme-home/call')).toEqual({ match: { name: 'homeCall', params: { volume: 'berth-x-acme-home' } } })
    for (const path of ['/v1/homes//call', '/v1/homes/v/other', '/v1/homes/v/call/x', '/v1/homes/%E0%A4%A/call']) {
      expect(matchRoute('POST', path)).toBeNull()
    }
  })

  it('refuse a call the control plane never sends: 400 bad_request, nothing changed', async () => {
    const before = tree(remoteDir)
    const post = (body: string) => fetch(`http://127.0.0.1:${server.port}/v1/homes/berth-test-acme-home/call`, { method: 'POST', body })
    for (const body of ['not json', '{}', JSON.stringify({ op: 'write', args: ['x', 'AA=='] }), JSON.stringify({ op: 'write', args: ['x', 'AA=='], owner: { uid: -1, gid: 0 } }),
      JSON.stringify({ op: 'chmod', args: ['x'], owner: OWNER }), JSON.stringify({ op: 'read', args: [1, 2], owner: OWNER }), JSON.stringify({ op: 'exists', args: ['../outside'], owner: OWNER }).replace('exists', 'write'),
      'x'.repeat(17 * 1024 * 1024)]) {
      const res = await post(body)
      expect(res.status).toBe(400)
      expect((await res.json()).error).toMatchObject({ kind: 'error', code: 'bad_request' })
    }
    expect(await homes.entryExists(remotePath, '../outside')).toBe(false)
    expect(tree(remoteDir)).toEqual(before)
  })

  it('read a file by ranges, within the file', async () => {
    const get = (range: string) => fetch(`http://127.0.0.1:${server.port}/v1/homes/berth-test-acme-home/file?path=public/index.html`, { headers: { range } })
    const whole = await fetch(`http://127.0.0.1:${server.port}/v1/homes/berth-test-acme-home/file?path=public/index.html`)
    expect([whole.status, await whole.text()]).toEqual([200, '<h1>hello</h1>'])
    expect(await (await get('bytes=4-8')).text()).toBe('hello')
    expect(await (await get('bytes=-5')).text()).toBe('</h1>')
    expect(await (await get('bytes=100-200')).text()).toBe('')
    expect((await get('bytes=5')).status).toBe(400)
  })
})
