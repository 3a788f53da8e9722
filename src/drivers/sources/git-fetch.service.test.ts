import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startGitServer, type GitServer, type Repo } from '../../../test/helpers/git-server'
import { OutboundRefusedError } from '../net/errors'
import { OutboundCheck, type Resolver } from '../net/outbound'
import { checkGitRef, gitFetchCommand, parseGitUrl, readGitFetch, type GitCredentials } from './git'

/**
 * Issue 39, item 1: the git fetch for real. The command gitFetchCommand builds runs on the host
 * (as it will in the site's container: the same argv and env, nothing else of the host's git
 * config or environment) against the test's git server in its network namespace
 * (test/helpers/git-server.ts): a branch, a tag, a commit, a private repository over HTTPS with a
 * token and without one, a tree with a submodule; then from a container of the app image on a
 * user-defined bridge network, as a site's container reaches it.
 */
const SERVER = process.env.BERTH_GITSRV_NAME ?? 'srgit'
const APP_IMAGE = 'berth/app:1'
let server: GitServer
let pub: Repo
let priv: Repo
let withSub: Repo
const dir = mkdtempSync(join(tmpdir(), 'berth-git-'))
// No DNS knows git.berth.test: the fetch reaches it only through the pinned address.
const resolver: Resolver = async (host) => {
  if (host === 'git.berth.test') return [server.address]
  throw new Error(`ENOTFOUND ${host}`)
}

beforeAll(async () => {
  server = await startGitServer(SERVER)
  pub = server.makeRepo('app', [{ files: { 'index.js': 'one' }, tag: 'v1.0.0' }, { files: { 'index.js': 'two', 'lib/x.js': 'x' } }, { files: { 'index.js': 'three' } }])
  priv = server.makeRepo('private', [{ files: { 'secret.txt': 'private tree' } }], { token: 'tok-4f9a' })
  server.makeRepo('other', [{ files: { 'elsewhere.txt': 'not fetched' } }])
  withSub = server.makeRepo('withsub', [{ files: { 'app.js': 'a' }, submodule: { path: 'vendor/other', repo: 'other' } }])
}, 30_000)

afterAll(async () => {
  await server?.close()
  rmSync(dir, { recursive: true, force: true })
})

let n = 0
/** Checks the URL as Berth does, builds the command and runs it on the host with only its env; the tree's folder and the answer. */
async function fetchTree(urlText: string, refText: string, options: { credentials?: GitCredentials; ca?: boolean; allow?: string[]; timeoutSeconds?: number } = {}) {
  const url = parseGitUrl(urlText)
  const ref = checkGitRef(refText)
  const pinned = await new OutboundCheck({ allowNetworks: options.allow ?? [server.network], ownHosts: [] }, resolver).check(url.host)
  const into = join(dir, `tree${n}`)
  const scratch = join(dir, `scratch${n++}`)
  const f = gitFetchCommand({ url, ref, pinned, dir: into, scratch, credentials: options.credentials, caBundle: options.ca ? server.caPem : undefined, timeoutSeconds: options.timeoutSeconds ?? 30 })
  mkdirSync(scratch, { mode: 0o700 })
  for (const file of f.files) writeFileSync(file.path, file.content, { mode: file.mode })
  const proc = Bun.spawn(f.argv, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: scratch, ...f.env }, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  rmSync(scratch, { recursive: true, force: true })
  return { into, answer: readGitFetch(code, `${out}${err}`, options.timeoutSeconds ?? 30), code }
}

describe('the git fetch, run for real against a git server on a private network', () => {
  it('a branch: shallow, the newest commit, no .git left', async () => {
    const { into, answer } = await fetchTree(pub.http, 'main')
    expect(answer).toEqual({ commit: pub.commits[2], submodules: false })
    expect(readFileSync(join(into, 'index.js'), 'utf8')).toBe('three')
    expect(readdirSync(into).sort()).toEqual(['index.js', 'lib'])
    // a shallow fetch: its pack request says `deepen 1`
    const packs = server.requests().filter((l) => l.includes('POST /app.git/git-upload-pack') && !l.includes('deepen=-'))
    expect(packs.map((l) => /deepen=(\S+)/.exec(l)?.[1])).toEqual(['1'])
  })

  it('a tag, and a commit by its full sha', async () => {
    const tag = await fetchTree(pub.http, 'v1.0.0')
    expect(tag.answer).toEqual({ commit: pub.commits[0], submodules: false })
    expect(readFileSync(join(tag.into, 'index.js'), 'utf8')).toBe('one')
    const commit = await fetchTree(pub.http, pub.commits[1])
    expect(commit.answer).toEqual({ commit: pub.commits[1], submodules: false })
    expect(readFileSync(join(commit.into, 'index.js'), 'utf8')).toBe('two')
  })

  it('a private repository over HTTPS with a token, through the pinned address (no DNS knows the name)', async () => {
    const url = priv.https
    const { into, answer } = await fetchTree(url, 'main', { credentials: { token: { value: 'tok-4f9a' } }, ca: true })
    expect(answer).toEqual({ commit: priv.commits[0], submodules: false })
    expect(readFileSync(join(into, 'secret.txt'), 'utf8')).toBe('private tree')
  })

  it('the private repository without a token, or with a wrong one: a failure saying what to give', async () => {
    for (const credentials of [undefined, { token: { value: 'wrong' } }]) {
      const { into, answer } = await fetchTree(priv.https, 'main', { credentials, ca: true })
      expect('error' in answer && answer.error).toContain('a private repository needs a token (https) or a deploy key (ssh)')
      expect(existsSync(join(into, 'secret.txt'))).toBe(false)
    }
    expect(server.requests().some((l) => l.startsWith('https GET /private.git/info/refs') && l.endsWith('auth=none'))).toBe(true)
  })

  it('over ssh with the deploy key (pinned by HostName: no DNS knows the name); another key refused', async () => {
    const { into, answer } = await fetchTree(pub.ssh, 'v1.0.0', { credentials: { deployKey: server.deployKey } })
    expect(answer).toEqual({ commit: pub.commits[0], submodules: false })
    expect(readFileSync(join(into, 'index.js'), 'utf8')).toBe('one')
    const other = await fetchTree(pub.ssh, 'main', { credentials: { deployKey: server.otherKey } })
    expect('error' in other.answer && other.answer.error).toContain('Permission denied (publickey)')
  })

  it('a server that never answers: killed at the time limit, with a message saying so', async () => {
    // accepts on the host side of the veth and says nothing
    const silent = Bun.listen({ hostname: server.hostSide, port: 0, socket: { data() {} } })
    try {
      const started = performance.now()
      const { answer, code } = await fetchTree(`http://${server.hostSide}:${silent.port}/slow.git`, 'main', { timeoutSeconds: 1 })
      expect(code).toBe(124)
      expect(answer).toEqual({ error: 'The git fetch did not finish within 1 s; fetch a smaller repository or ref.' })
      expect(performance.now() - started).toBeLessThan(4000)
    } finally {
      silent.stop(true)
    }
  })

  it('a missing ref fails with git\'s words', async () => {
    const { answer } = await fetchTree(pub.http, 'no-such-branch')
    expect('error' in answer && answer.error).toContain("couldn't find remote ref no-such-branch")
  })

  it('a tree with a submodule is reported, and the submodule is not fetched', async () => {
    const { into, answer } = await fetchTree(withSub.http, 'main')
    expect(answer).toEqual({ commit: withSub.commits[0], submodules: true })
    expect(readdirSync(join(into, 'vendor', 'other'))).toEqual([])
    expect(server.requests().some((l) => l.includes('/other.git/'))).toBe(false)
  })

  it("the server's address is refused unless outbound.allow_networks lists its network", async () => {
    const err = await fetchTree(pub.http, 'main', { allow: [] }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(OutboundRefusedError)
    expect((err as Error).message).toContain(`"${server.address}" is a private network address`)
  })

  it('a container on a user-defined bridge network (as a site\'s) fetches from it with the same command', async () => {
    const network = `berth-${SERVER}-net`
    removeNetwork(network)
    execFileSync('docker', ['network', 'create', '--driver', 'bridge', network], { stdio: 'ignore' })
    try {
      const url = parseGitUrl(pub.http)
      const pinned = await new OutboundCheck({ allowNetworks: [server.network], ownHosts: [] }, resolver).check(url.host)
      const f = gitFetchCommand({ url, ref: checkGitRef('v1.0.0'), pinned, dir: '/tmp/tree', scratch: '/tmp/scratch', timeoutSeconds: 30 })
      const env = Object.entries(f.env).flatMap(([k, v]) => ['-e', `${k}=${v}`])
      const out = execFileSync('docker', ['run', '--rm', '--network', network, '--user', '1000:1000', '--entrypoint', '', '--read-only', '--tmpfs', '/tmp', ...env, APP_IMAGE, ...f.argv], { encoding: 'utf8' })
      expect(readGitFetch(0, out)).toEqual({ commit: pub.commits[0], submodules: false })
    } finally {
      removeNetwork(network)
    }
  }, 60_000)
})

/** A network an earlier run of this file left, or this run's. */
function removeNetwork(name: string): void {
  try {
    execFileSync('docker', ['network', 'rm', name], { stdio: 'ignore' })
  } catch {
    // none of that name
  }
}
