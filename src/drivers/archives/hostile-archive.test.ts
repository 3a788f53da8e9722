import { execFileSync } from 'node:child_process'
import { existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { nodeHomes } from '../cluster/node-homes'
import { nodeHomePath, type ClusterNode, type NodeLink } from '../cluster/types'
import { agentHandlers } from '../../node-agent/server/api'
import type { Forwards } from '../../node-agent/server/forwards'
import { HOMES_MAX_REQUEST_BODY } from '../../node-agent/server/home-agent'
import { routeAgentRequest } from '../../node-agent/server/router'
import { replaceHome, tarHome } from './home-tar'
import { UnsafeArchiveError } from './types'

/**
 * Issue 36, item 5: archives never write outside a home. Every way an archive goes into a home
 * is driven for real, as root, with GNU tar: a restore (and a move, which is a restore on the
 * target) with replaceHome on this box, a rollback (which keeps `.ssh`), and a move to a node,
 * through a node agent's homes route served on loopback (remoteReplaceHome → the agent's
 * router → its replaceHome route → replaceHome there). The home's `logs` and `.ssh` are links to a folder outside it, and each
 * archive is one a hostile party could have made (a forged off-box copy): each is refused before
 * anything is written, saying which member and why, and nothing outside the home changes.
 */
const dir = mkdtempSync(join(tmpdir(), 'berth-hostile-'))
afterAll(() => {
  server.stop(true)
  rmSync(dir, { recursive: true, force: true })
})

/** The node's agent, its homes route on loopback (plain HTTP: the link's TLS is the nodes' own test). */
const volumes = new Map<string, string>()
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  maxRequestBodySize: HOMES_MAX_REQUEST_BODY,
  fetch: (req) => routeAgentRequest(agent, req),
})
const agent = agentHandlers({
  info: async () => {
    throw new Error('not in this test')
  },
  forwards: {} as Forwards,
  homes: async (volume) => volumes.get(volume) ?? null,
})
const NODE: ClusterNode = {
  id: 'n1', name: 'worker', address: '127.0.0.1', agentPort: 0, swarmNodeId: null, certFingerprint: '', certSerial: '', state: 'active',
  memoryBytes: 0, cpus: 1, joinedAt: 0, lastSeenAt: null,
}
const link: NodeLink = {
  fetch: (_node, path, init) => fetch(`http://127.0.0.1:${server.port}${path}`, init),
  engineOptions: () => {
    throw new Error('not in this test')
  },
}
const homes = nodeHomes({ link, node: (id) => (id === NODE.id ? NODE : null) })

type Way = 'restore' | 'rollback' | 'move to a node'
const WAYS: { way: Way; keep: string[]; replace: (home: string, tar: string, keep: string[]) => Promise<void> }[] = [
  { way: 'restore', keep: [], replace: replaceHome },
  { way: 'rollback', keep: ['.ssh'], replace: replaceHome },
  {
    way: 'move to a node',
    keep: [],
    replace: (home, tar, keep) => {
      const volume = `berth-test-${volumes.size}-home`
      volumes.set(volume, home)
      return homes.tar.replaceHome(nodeHomePath(NODE.id, volume), tar, keep)
    },
  },
]

/** A box: `home` with `logs` and `.ssh` linked to `outside`, and a page. */
function makeBox(name: string) {
  const box = join(dir, name)
  const home = join(box, 'home')
  const outside = join(box, 'outside')
  mkdirSync(join(home, 'public'), { recursive: true })
  mkdirSync(outside)
  writeFileSync(join(home, 'public', 'index.html'), 'before')
  symlinkSync(outside, join(home, 'logs'))
  symlinkSync(outside, join(home, '.ssh'))
  return { box, home, outside }
}

const HOSTNAME = '/etc/hostname'
const hostFile = () => ({ text: readFileSync(HOSTNAME, 'utf8'), nlink: statSync(HOSTNAME).nlink })

describe('a hostile archive, into a home whose logs and .ssh are links out', () => {
  it('runs as root, as Berth does', () => {
    expect(process.getuid?.()).toBe(0)
  })

  /** Each archive, given the box's `outside` folder, and why it is refused. */
  const ROWS: { what: string; members: (outside: string) => Member[]; why: RegExp; refusedOnlyWhenKept?: true }[] = [
    { what: 'logs/x (not under ./, through the logs link)', members: () => [file('logs/x', 'root wrote this')], why: /member "logs\/x" is not under \.\// },
    { what: './logs/x (under the kept logs)', members: () => [file('./logs/x', 'root wrote this')], why: /member "\.\/logs\/x" is under "\.\/logs", which this restore keeps/ },
    { what: './logs/../../x', members: () => [file('./logs/../../x', 'root wrote this')], why: /member "\.\/logs\/\.\.\/\.\.\/x" climbs out with "\.\."/ },
    { what: '../x', members: () => [file('../x', 'root wrote this')], why: /member "\.\.\/x" climbs out/ },
    { what: 'an absolute path', members: (outside) => [file(`${outside}/abs`, 'root wrote this')], why: /is an absolute path/ },
    { what: 'a link, then a file through it', members: (outside) => [dirm('./'), symlink('./out', outside), file('./out/x', 'root wrote this')], why: /member "\.\/out\/x" would be written through the symbolic link "\.\/out"/ },
    { what: 'a hard link to a host file', members: () => [dirm('./'), hardlink('./h', HOSTNAME)], why: /member "\.\/h" is a hard link to "\/etc\/hostname", which is an absolute path/ },
    { what: 'a hard link to a host file through a link', members: () => [dirm('./'), symlink('./etc', '/etc'), hardlink('./h', './etc/hostname')], why: /member "\.\/h" is a hard link to "\.\/etc\/hostname", which would be written through the symbolic link "\.\/etc"/ },
    { what: 'a hard link to a file it does not hold', members: () => [dirm('./'), hardlink('./h', './public/index.html')], why: /is not an earlier file of the archive/ },
    { what: 'a device', members: () => [dirm('./'), device('./null', 1, 3)], why: /member "\.\/null" is a device/ },
    { what: 'a file in Berth\'s own incoming folder', members: () => [file('./.berth-restore-incoming/x', 'x')], why: /under "\.\/\.berth-restore-incoming", which this restore keeps/ },
    { what: './.ssh/authorized_keys (under .ssh, which a rollback keeps)', members: () => [dirm('./'), dirm('./.ssh/'), file('./.ssh/authorized_keys', 'ssh-ed25519 AAAA attacker')], why: /member "\.\/\.ssh\/" is under "\.\/\.ssh", which this restore keeps/, refusedOnlyWhenKept: true },
  ]

  for (const row of ROWS) {
    for (const { way, keep, replace } of WAYS) {
      const refused = !row.refusedOnlyWhenKept || keep.includes('.ssh')
      it(`${row.what}: ${way} ${refused ? 'refused, saying why' : 'takes it into the home'}; nothing written outside`, async () => {
        const { box, home, outside } = makeBox(`${way}-${ROWS.indexOf(row)}`.replaceAll(' ', '-'))
        const before = hostFile()
        const tar = join(box, '..', `${way}-${ROWS.indexOf(row)}.tar`.replaceAll(' ', '-'))
        writeFileSync(tar, makeTar(row.members(outside)))
        const err = await replace(home, tar, keep).then(() => null, (e: Error) => e)
        // Nothing outside the home: not in the folder its links point to, not beside it, not the host's files.
        expect(readdirSync(outside)).toEqual([])
        expect(readdirSync(box).sort()).toEqual(['home', 'outside'])
        expect(hostFile()).toEqual(before)
        if (refused) {
          expect(err).toBeInstanceOf(UnsafeArchiveError)
          expect(err!.message).toMatch(/^The archive was refused and nothing was written to the home: /)
          expect(err!.message).toMatch(row.why)
          // Refused before anything was touched: the home is as it was, links included.
          expect(readdirSync(home).sort()).toEqual(['.ssh', 'logs', 'public'])
          expect(readFileSync(join(home, 'public', 'index.html'), 'utf8')).toBe('before')
          expect(readlinkSync(join(home, 'logs'))).toBe(outside)
        } else {
          expect(err).toBeNull()
          expect(lstatSync(join(home, '.ssh')).isDirectory()).toBe(true)
          expect(readFileSync(join(home, '.ssh', 'authorized_keys'), 'utf8')).toContain('attacker')
        }
      })
    }
  }

  for (const { way, keep, replace } of WAYS) {
    it(`a good archive (${way}): its files come in, links inside it stay links, and the home's logs and .ssh links are moved aside, not followed`, async () => {
      const { box, home, outside } = makeBox(`good-${way}`.replaceAll(' ', '-'))
      writeFileSync(join(outside, 'secret'), 'host')
      const source = join(box, 'source')
      mkdirSync(join(source, 'public', 'img'), { recursive: true })
      writeFileSync(join(source, 'public', 'index.html'), 'restored')
      writeFileSync(join(source, 'public', 'img', 'a.png'), 'png')
      symlinkSync('/etc', join(source, 'public', 'etc'))
      symlinkSync('img/a.png', join(source, 'public', 'logo.png'))
      const tar = join(dir, `good-${way}.tar`.replaceAll(' ', '-'))
      await tarHome(source, tar, keep)
      rmSync(source, { recursive: true })

      await replace(home, tar, keep)
      expect(readFileSync(join(home, 'public', 'index.html'), 'utf8')).toBe('restored')
      expect(readlinkSync(join(home, 'public', 'etc'))).toBe('/etc')
      expect(readFileSync(join(home, 'public', 'logo.png'), 'utf8')).toBe('png')
      // The links that stood at kept names are gone with the old files; their target is untouched.
      expect(readdirSync(home).sort()).toEqual(['public'])
      expect(readdirSync(outside)).toEqual(['secret'])
      expect(readFileSync(join(outside, 'secret'), 'utf8')).toBe('host')
      expect(existsSync(join(home, '.berth-restore-incoming'))).toBe(false)
    })
  }

  it("Berth's folders planted by the site as links out are unlinked, not followed; a swap cut short by a crash is completed", async () => {
    const { box, home, outside } = makeBox('planted')
    for (const name of ['.berth-restore-incoming', '.berth-restore-moving', '.berth-restore-previous']) symlinkSync(outside, join(home, name))
    const tar = join(box, '..', 'planted.tar')
    writeFileSync(tar, makeTar([dirm('./'), file('./index.html', 'new')]))
    await replaceHome(home, tar)
    expect(readdirSync(home).sort()).toEqual(['index.html'])
    expect(readdirSync(outside)).toEqual([])
    // A crash after the old files were moved aside (a root-owned ASIDE) and part of the swap: run again, the archive's files and nothing else.
    mkdirSync(join(home, '.berth-restore-previous'), { mode: 0o700 })
    writeFileSync(join(home, '.berth-restore-previous', 'old.html'), 'old')
    writeFileSync(join(home, 'half.html'), 'half swapped')
    await replaceHome(home, tar)
    expect(readdirSync(home).sort()).toEqual(['index.html'])
    expect(readFileSync(join(home, 'index.html'), 'utf8')).toBe('new')
  })

  it('a real logs folder is kept as it is, and the home takes the owner and mode of the archive', async () => {
    const home = join(dir, 'plain-home')
    mkdirSync(join(home, 'logs'), { recursive: true })
    writeFileSync(join(home, 'logs', 'access.log'), 'kept')
    const tar = join(dir, 'plain.tar')
    writeFileSync(tar, makeTar([dirm('./', 0o751, 1000), file('./index.html', 'new')]))
    await replaceHome(home, tar)
    expect(readdirSync(home).sort()).toEqual(['index.html', 'logs'])
    expect(readFileSync(join(home, 'logs', 'access.log'), 'utf8')).toBe('kept')
    const st = statSync(home)
    expect([st.uid, st.mode & 0o7777]).toEqual([1000, 0o751])
  })
})

describe('the check reads headers as GNU tar does', () => {
  const check = async (members: Member[]) => {
    const home = mkdtempSync(join(dir, 'check-'))
    const tar = `${home}.tar`
    writeFileSync(tar, makeTar(members))
    return replaceHome(home, tar).then(() => readdirSync(home).sort(), (e: Error) => e)
  }

  it('takes what tar makes: long names, non-ASCII names, hard links, links, FIFOs, and the pax format', async () => {
    const source = join(dir, 'rich')
    const deep = join(source, 'public', 'a'.repeat(120), 'b'.repeat(120))
    mkdirSync(deep, { recursive: true })
    writeFileSync(join(deep, `${'c'.repeat(150)}.html`), 'deep')
    writeFileSync(join(source, 'public', 'café ünïcödé.html'), 'accents')
    linkSync(join(source, 'public', 'café ünïcödé.html'), join(source, 'public', 'hard'))
    symlinkSync(join('a'.repeat(120), 'b'.repeat(120)), join(source, 'public', 'short'))
    execFileSync('mkfifo', [join(source, 'pipe')])
    for (const format of ['gnu', 'posix']) {
      const home = join(dir, `rich-home-${format}`)
      mkdirSync(join(home, 'logs'), { recursive: true })
      const tar = join(dir, `rich-${format}.tar`)
      execFileSync('tar', ['--create', `--format=${format}`, '--file', tar, '--numeric-owner', '--directory', source, '.'])
      await replaceHome(home, tar)
      expect(readFileSync(join(home, 'public', 'a'.repeat(120), 'b'.repeat(120), `${'c'.repeat(150)}.html`), 'utf8')).toBe('deep')
      expect(statSync(join(home, 'public', 'hard')).ino).toBe(statSync(join(home, 'public', 'café ünïcödé.html')).ino)
      expect(readlinkSync(join(home, 'public', 'short'))).toBe(join('a'.repeat(120), 'b'.repeat(120)))
      expect(lstatSync(join(home, 'pipe')).isFIFO()).toBe(true)
    }
  })

  it('refuses a name from a GNU long name, a pax path, a pax linkpath and a POSIX prefix, as tar would read it', async () => {
    const long = `./logs/${'x'.repeat(150)}`
    expect(await check([dirm('./'), { name: long, type: 'L', data: `${long}\0` }, file('./innocent', 'x')])).toMatchObject({ message: expect.stringContaining(`member "${long}" is under "./logs"`) })
    expect(await check([dirm('./'), pax({ path: '../escaped' }), file('./innocent', 'x')])).toMatchObject({ message: expect.stringContaining('member "../escaped" climbs out') })
    expect(await check([dirm('./'), file('./f', 'x'), pax({ linkpath: '/etc/hostname' }), hardlink('./h', './f')])).toMatchObject({ message: expect.stringContaining('hard link to "/etc/hostname", which is an absolute path') })
    expect(await check([dirm('./'), { ...file('x', 'y'), prefix: './logs' }])).toMatchObject({ message: expect.stringContaining('member "./logs/x" is under "./logs"') })
  })

  it('refuses what tar could read otherwise: a damaged header, a global header, a sparse member', async () => {
    const damaged = makeTar([dirm('./'), file('./a', 'x'), file('./b', 'y')])
    damaged[1536 + 5] ^= 1
    const home = mkdtempSync(join(dir, 'damaged-'))
    writeFileSync(`${home}.tar`, damaged)
    expect(await replaceHome(home, `${home}.tar`).catch((e: Error) => e)).toMatchObject({ message: expect.stringContaining('the header at byte 1536 is damaged') })
    expect(await check([pax({ path: './x' }, 'g'), dirm('./')])).toMatchObject({ message: expect.stringContaining('of a type ("g")') })
    expect(await check([dirm('./'), pax({ 'GNU.sparse.major': '1' }), file('./s', 'x')])).toMatchObject({ message: expect.stringContaining('sparse') })
  })
})

/** A member of a hand-made archive: the name exactly as given (no `./` added, no `/` stripped). */
interface Member {
  name: string
  type: '0' | '1' | '2' | '3' | '5' | 'x' | 'g' | 'L'
  data?: string
  link?: string
  mode?: number
  uid?: number
  dev?: [number, number]
  /** POSIX ustar (`ustar\0`, with a prefix) rather than GNU's `ustar  `. */
  prefix?: string
}
const file = (name: string, data: string): Member => ({ name, type: '0', data })
const dirm = (name: string, mode = 0o755, uid = 0): Member => ({ name, type: '5', mode, uid })
const symlink = (name: string, link: string): Member => ({ name, type: '2', link })
const hardlink = (name: string, link: string): Member => ({ name, type: '1', link })
const device = (name: string, major: number, minor: number): Member => ({ name, type: '3', dev: [major, minor] })
/** A pax header (`x`, or global `g`) of `records`, for the member after it. */
const pax = (records: Record<string, string>, type: 'x' | 'g' = 'x'): Member => ({
  name: './PaxHeaders/x',
  type,
  data: Object.entries(records)
    .map(([k, v]) => {
      const body = ` ${k}=${v}\n`
      let len = Buffer.byteLength(body) + 1
      while (String(len).length + Buffer.byteLength(body) !== len) len++
      return `${len}${body}`
    })
    .join(''),
})

/** A GNU-format tar of `members`, as a hostile party would write it. */
function makeTar(members: Member[]): Uint8Array {
  const blocks: Buffer[] = []
  for (const m of members) {
    const data = Buffer.from(m.data ?? '')
    const h = Buffer.alloc(512)
    h.write(m.name, 0, 100, 'utf8')
    h.write(`${(m.mode ?? (m.type === '5' ? 0o755 : 0o644)).toString(8).padStart(7, '0')}\0`, 100, 'latin1')
    h.write(`${(m.uid ?? 0).toString(8).padStart(7, '0')}\0`, 108, 'latin1')
    h.write(`${(m.uid ?? 0).toString(8).padStart(7, '0')}\0`, 116, 'latin1')
    h.write(`${data.length.toString(8).padStart(11, '0')}\0`, 124, 'latin1')
    h.write(`${(1_704_067_200).toString(8).padStart(11, '0')}\0`, 136, 'latin1')
    h.write(m.type, 156, 'latin1')
    if (m.link) h.write(m.link, 157, 100, 'utf8')
    if (m.prefix === undefined) h.write('ustar  \0', 257, 'latin1')
    else {
      h.write('ustar\0' + '00', 257, 'latin1')
      h.write(m.prefix, 345, 155, 'utf8')
    }
    if (m.dev) {
      h.write(`${m.dev[0].toString(8).padStart(7, '0')}\0`, 329, 'latin1')
      h.write(`${m.dev[1].toString(8).padStart(7, '0')}\0`, 337, 'latin1')
    }
    h.fill(0x20, 148, 156)
    const sum = h.reduce((n, b) => n + b, 0)
    h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1')
    blocks.push(h, data, Buffer.alloc((512 - (data.length % 512)) % 512))
  }
  blocks.push(Buffer.alloc(1024))
  return Buffer.concat(blocks)
}
