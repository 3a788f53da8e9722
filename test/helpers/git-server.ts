import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

/**
 * A git server for the tests of git sources (issue 39): `git http-backend` behind a small Bun
 * server (test/helpers/git-http-main.ts), on plain HTTP (port 80) and HTTPS (443, a certificate
 * of the test's own CA for `git.berth.test` and the server's address), in a network namespace of
 * its own (`berthgit-{name}`) joined to the host by a veth pair on `10.248.{k}.0/30`: the host
 * side `bg-{name}` is .1, the server .2. So the host reaches it by its address, and a container
 * on any Docker bridge network (a site's) reaches it through the host's routing, as it would a
 * server on the hoster's private network (Docker's masquerade makes its connections come from
 * 10.248.{k}.1). Berth's outbound check refuses that address unless `outbound.allow_networks`
 * lists `network`, which the tests do.
 *
 * Repositories are bare ones under `{root}/repos`, made by the test with `makeRepo` (commits of
 * the files it gives, tags, a submodule); `token` makes one private (HTTP Basic, the token as the
 * password). `close()` stops the server, removes the namespace (and with it the veth pair) and the
 * folder; a start sweeps what a killed run of the same name left.
 */
export interface GitServer {
  /** The server's address (10.248.k.2) and the host side's (10.248.k.1). */
  address: string
  hostSide: string
  /** The /30 to list in outbound.allow_networks. */
  network: string
  /** The name the HTTPS certificate is for (resolve it to `address`: no DNS knows it). */
  httpsHost: string
  /** The CA that signed the HTTPS certificate, PEM. */
  caPem: string
  /** The private key (OpenSSH) the SSH server takes, as a site's deploy key would be. */
  deployKey: string
  /** Another key, which the SSH server does not take. */
  otherKey: string
  root: string
  makeRepo(name: string, history: Commit[], options?: { token?: string; branch?: string }): Repo
  /** The lines the server logged for each request (`http GET /x.git/info/refs?... auth=none`). */
  requests(): string[]
  close(): Promise<void>
}

export interface Commit {
  files: Record<string, string>
  tag?: string
  /** Symbolic links committed as they are: path -> target (a hostile tree's link out of it). */
  links?: Record<string, string>
  /** A real submodule at this path, pointing at another repository of this server (by name). */
  submodule?: { path: string; repo: string }
}

export interface Repo {
  /** http://{address}/{name}.git */
  http: string
  /** https://git.berth.test/{name}.git */
  https: string
  /** ssh://root@git.berth.test/{root}/repos/{name}.git (the deploy key; every session forced through git-shell) */
  ssh: string
  /** Each commit's sha, oldest first. */
  commits: string[]
}

const GIT_ENV = { GIT_AUTHOR_NAME: 'Test', GIT_AUTHOR_EMAIL: 't@berth.test', GIT_COMMITTER_NAME: 'Test', GIT_COMMITTER_EMAIL: 't@berth.test', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' }
const MAIN = join(import.meta.dirname, 'git-http-main.ts')

export async function startGitServer(name: string): Promise<GitServer> {
  if (!/^[a-z0-9]{1,6}$/.test(name)) throw new Error(`a git server's name is 1 to 6 of a-z0-9 (got ${name})`)
  const ns = `berthgit-${name}`
  const link = `bg-${name}`
  sweep(ns, link)
  const k = freeSubnet(name)
  const [hostSide, address] = [`10.248.${k}.1`, `10.248.${k}.2`]
  const root = `/tmp/berthgit-${name}`
  rmSync(root, { recursive: true, force: true })
  mkdirSync(join(root, 'repos'), { recursive: true })
  sh('ip', 'netns', 'add', ns)
  sh('ip', 'link', 'add', link, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns)
  sh('ip', 'addr', 'add', `${hostSide}/30`, 'dev', link)
  sh('ip', 'link', 'set', link, 'up')
  sh('ip', '-n', ns, 'addr', 'add', `${address}/30`, 'dev', 'eth0')
  sh('ip', '-n', ns, 'link', 'set', 'eth0', 'up')
  sh('ip', '-n', ns, 'link', 'set', 'lo', 'up')
  sh('ip', '-n', ns, 'route', 'add', 'default', 'via', hostSide)
  const httpsHost = 'git.berth.test'
  const caPem = makeCertificates(root, httpsHost, address)
  const server = spawn('ip', ['netns', 'exec', ns, process.execPath, MAIN, root], { stdio: ['ignore', 'pipe', 'inherit'] })
  await listening(server)
  const [deployKey, otherKey] = [makeKey(root, 'deploy_key'), makeKey(root, 'other_key')]
  const sshd = startSshd(root, ns)
  await reachable(address, 22, sshd)
  const tokens: Record<string, string> = {}

  return {
    address, hostSide, network: `10.248.${k}.0/30`, httpsHost, caPem, deployKey, otherKey, root,
    makeRepo(repoName, history, options = {}) {
      const work = join(root, 'work', repoName)
      const bare = join(root, 'repos', `${repoName}.git`)
      const branch = options.branch ?? 'main'
      git(root, 'init', '-q', '-b', branch, work)
      const commits: string[] = []
      for (const commit of history) {
        for (const [path, content] of Object.entries(commit.files)) {
          mkdirSync(dirname(join(work, path)), { recursive: true })
          writeFileSync(join(work, path), content)
        }
        for (const [path, target] of Object.entries(commit.links ?? {})) {
          mkdirSync(dirname(join(work, path)), { recursive: true })
          symlinkSync(target, join(work, path))
        }
        if (commit.submodule) git(work, '-c', 'protocol.file.allow=always', 'submodule', '-q', 'add', join(root, 'repos', `${commit.submodule.repo}.git`), commit.submodule.path)
        git(work, 'add', '-A')
        git(work, 'commit', '-q', '--allow-empty', '-m', `commit ${commits.length + 1}`)
        commits.push(git(work, 'rev-parse', 'HEAD').trim())
        if (commit.tag) git(work, 'tag', '-a', '-m', commit.tag, commit.tag)
      }
      rmSync(bare, { recursive: true, force: true })
      git(root, 'clone', '-q', '--bare', work, bare)
      if (options.token) {
        tokens[`${repoName}.git`] = options.token
        writeFileSync(join(root, 'auth.json'), JSON.stringify(tokens))
      }
      return { http: `http://${address}/${repoName}.git`, https: `https://${httpsHost}/${repoName}.git`, ssh: `ssh://root@${httpsHost}${bare}`, commits }
    },
    requests() {
      const log = join(root, 'requests.log')
      return existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []
    },
    async close() {
      for (const child of [server, sshd]) {
        child.kill('SIGKILL')
        await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.once('exit', r)))
      }
      sweep(ns, link)
      rmSync(root, { recursive: true, force: true })
    },
  }
}

function sh(...argv: string[]): string {
  return execFileSync(argv[0], argv.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, ...GIT_ENV }, stdio: ['ignore', 'pipe', 'pipe'] })
}

/** What an earlier run of this name left: the namespace's processes, the namespace (its veth goes with it) and the host link. */
function sweep(ns: string, link: string): void {
  if (existsSync(`/run/netns/${ns}`)) {
    const pids = execFileSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).split('\n').filter(Boolean)
    for (const pid of pids) {
      try {
        process.kill(Number(pid), 'SIGKILL')
      } catch {
        // gone already
      }
    }
    execFileSync('ip', ['netns', 'del', ns])
  }
  try {
    execFileSync('ip', ['link', 'del', link], { stdio: 'ignore' })
  } catch {
    // no such link
  }
}

/** The first 10.248.k.0/30 no host address is in, from a hash of the name (servers of different names run at once). */
function freeSubnet(name: string): number {
  const used = execFileSync('ip', ['-o', '-4', 'addr'], { encoding: 'utf8' })
  const start = createHash('sha256').update(name).digest()[0]
  for (let i = 0; i < 250; i++) {
    const k = ((start + i) % 250) + 1
    if (!used.includes(`10.248.${k}.`)) return k
  }
  throw new Error('no free 10.248.k.0/30 for a git server')
}

/** A CA and a certificate of it for `host` and `address` (cert.pem, key.pem); the CA's PEM. */
function makeCertificates(root: string, host: string, address: string): string {
  const at = (f: string) => join(root, f)
  sh('openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', at('ca.key'), '-out', at('ca.pem'), '-days', '2', '-subj', '/CN=berth test git CA')
  sh('openssl', 'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', at('key.pem'), '-out', at('cert.csr'), '-subj', `/CN=${host}`)
  writeFileSync(at('san.ext'), `subjectAltName=DNS:${host},IP:${address}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`)
  sh('openssl', 'x509', '-req', '-in', at('cert.csr'), '-CA', at('ca.pem'), '-CAkey', at('ca.key'), '-CAcreateserial', '-out', at('cert.pem'), '-days', '2', '-extfile', at('san.ext'))
  return readFileSync(at('ca.pem'), 'utf8')
}

/** A key pair (ed25519) in `root`; the private key's text. */
function makeKey(root: string, name: string): string {
  sh('ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', join(root, name))
  return readFileSync(join(root, name), 'utf8')
}

/**
 * OpenSSH's sshd in the namespace, port 22: only the deploy key, as root (sshd logs in an
 * existing user, and the test machine has no `git` one), every session forced through git-shell
 * (upload-pack and receive-pack, nothing else).
 */
function startSshd(root: string, ns: string): ChildProcess {
  const at = (f: string) => join(root, f)
  sh('ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', at('ssh_host_key'))
  const pub = readFileSync(at('deploy_key.pub'), 'utf8').trim()
  writeFileSync(at('authorized_keys'), `command="git-shell -c \\"$SSH_ORIGINAL_COMMAND\\"",no-port-forwarding,no-pty,no-agent-forwarding,no-X11-forwarding ${pub}\n`, { mode: 0o600 })
  writeFileSync(at('sshd_config'), [
    'Port 22', 'ListenAddress 0.0.0.0', `HostKey ${at('ssh_host_key')}`, `PidFile ${at('sshd.pid')}`,
    `AuthorizedKeysFile ${at('authorized_keys')}`, 'StrictModes no', 'PasswordAuthentication no', 'KbdInteractiveAuthentication no',
    'UsePAM no', 'PermitRootLogin prohibit-password', 'PrintMotd no', 'AcceptEnv GIT_PROTOCOL', 'LogLevel ERROR', '',
  ].join('\n'))
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 })
  return spawn('ip', ['netns', 'exec', ns, '/usr/sbin/sshd', '-D', '-e', '-f', at('sshd_config'), '-o', 'AllowUsers=root'], { stdio: ['ignore', 'ignore', 'inherit'] })
}

/** Resolves once `address:port` takes a connection (from the host). */
async function reachable(address: string, port: number, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`the server for port ${port} exited (${child.exitCode})`)
    const ok = await Bun.connect({ hostname: address, port, socket: { data() {}, open(s) { s.end() } } }).then(() => true, () => false)
    if (ok) return
    await Bun.sleep(50)
  }
  throw new Error(`nothing answers on ${address}:${port}`)
}

function listening(server: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = ''
    const timer = setTimeout(() => reject(new Error(`the git server did not start: ${seen}`)), 15_000)
    server.stdout!.on('data', (d: Buffer) => {
      seen += d.toString()
      if (seen.includes('listening')) {
        clearTimeout(timer)
        resolve()
      }
    })
    server.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`the git server exited (${code}): ${seen}`))
    })
  })
}
