import { spawn as spawnNode } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type Docker from 'dockerode'
import { prefetchDebs } from './debian-prefetch'
import { followStream, ignoring } from './engine'

/** What a Debian root filesystem image is made of (debootstrap --variant=minbase plus `include`). */
export interface DebianRecipe {
  suite: string
  arch: string
  include: string[]
  /** Bump when cleanRoot (or the recipe's own `customize`) changes. */
  cleanup: number
}

/** What the PHP image's base is made of; changing it changes the base tag, forcing a new base. */
export const DEBIAN_BASE: DebianRecipe = {
  suite: 'bookworm',
  arch: 'amd64',
  // PHP's MySQL/MariaDB (mysqli, pdo_mysql), PostgreSQL and Redis extensions, and the engines'
  // own clients (psql, mariadb, redis-cli): the site's databases (issue 40). The extensions PHP
  // apps expect besides (WordPress's and Laravel's requirements): xml (dom, simplexml, xmlreader,
  // xmlwriter), mbstring, curl, gd, zip, intl and bcmath.
  include: ['nginx-light', 'php-fpm', 'openssh-server', 'php-mysql', 'php-pgsql', 'php-redis', 'php-xml', 'php-mbstring', 'php-curl', 'php-gd', 'php-zip', 'php-intl', 'php-bcmath', 'postgresql-client-15', 'mariadb-client', 'redis-tools'],
  cleanup: 1,
}

export const DEFAULT_MIRROR = 'http://deb.debian.org/debian'

/**
 * `<repo>:<suite>-<hash of the recipe>`, by default `berth/php-base:bookworm-...` for DEBIAN_BASE;
 * the mirror is not part of it. The end-to-end tests make their systemd image the same way.
 */
export function debianBaseTag(recipe: DebianRecipe = DEBIAN_BASE, repo = 'berth/php-base'): string {
  const hash = createHash('sha256').update(JSON.stringify(recipe)).digest('hex').slice(0, 12)
  return `${repo}:${recipe.suite}-${hash}`
}

export interface DebianBaseOptions {
  mirror: string
  /** Kept between builds: debootstrap's --cache-dir of downloaded packages. */
  cacheDir: string
  /** Where the root filesystem is assembled; must allow devices and exec (not a nodev tmpfs). */
  workDir: string
  /** Environment of debootstrap (PATH, proxy variables). */
  env: Record<string, string | undefined>
  progress: (line: string) => void
  /** What to build (default DEBIAN_BASE). */
  recipe?: DebianRecipe
  /** Changes to the root filesystem after cleanRoot, before the import. */
  customize?: (root: string) => void
  /** Dockerfile instructions applied at import (default: PATH and CMD bash). */
  changes?: string[]
}

/**
 * Builds the Debian base image: `debootstrap --variant=minbase` into a scratch folder, trimmed,
 * imported through the engine's API (POST /images/create?fromSrc=-). Needs root (debootstrap
 * chroots and creates device nodes). Returns the image id.
 */
export async function buildDebianBase(docker: Docker, tag: string, opts: DebianBaseOptions): Promise<string> {
  if (process.getuid?.() !== 0) throw new Error('Building the PHP and app images runs debootstrap, which needs root; run berth images build as root.')
  const recipe = opts.recipe ?? DEBIAN_BASE
  mkdirSync(opts.workDir, { recursive: true })
  await removeStaleWork(opts.workDir)
  const work = mkdtempSync(join(opts.workDir, WORK_PREFIX))
  const root = join(work, 'root')
  try {
    const started = Date.now()
    try {
      const { wanted, downloaded } = await prefetchDebs({ mirror: opts.mirror, suite: recipe.suite, arch: recipe.arch, include: recipe.include, cacheDir: opts.cacheDir })
      opts.progress(`fetched ${downloaded} of ${wanted} Debian packages in ${seconds(started)} s`)
    } catch (err) {
      opts.progress(`could not prefetch packages (${(err as Error).message}); debootstrap downloads them one by one`)
    }
    opts.progress(`debootstrap ${recipe.suite} (${recipe.include.join(', ')}), about a minute and a half`)
    await run([
      'debootstrap', '--variant=minbase', `--include=${recipe.include.join(',')}`, `--arch=${recipe.arch}`,
      `--cache-dir=${opts.cacheDir}`, recipe.suite, root, opts.mirror,
    ], debootstrapEnv(opts.env), root)
    cleanRoot(root)
    opts.customize?.(root)
    opts.progress(`importing the root filesystem as ${tag}`)
    return await importRoot(docker, root, tag, debootstrapEnv(opts.env), opts.changes ?? IMPORT_CHANGES)
  } finally {
    await removeTree(work)
  }
}

/**
 * Streams `root` as a tar into POST /images/create?fromSrc=-. The import goes to a temporary tag
 * that is renamed only once tar has finished cleanly: a truncated archive must never carry the
 * base's tag, or every later build would skip debootstrap and reuse it.
 */
const IMPORT_CHANGES = ['ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'CMD ["/bin/bash"]']

async function importRoot(docker: Docker, root: string, tag: string, env: Record<string, string>, changes: string[]): Promise<string> {
  const [repo, version] = tag.split(':')
  const importing = `${repo}:importing-${process.pid}`
  const tar = spawnNode('tar', ['--numeric-owner', '-C', root, '-cf', '-', '.'], { stdio: ['ignore', 'pipe', 'pipe'], env })
  let tarErrors = ''
  tar.stderr.on('data', (chunk: Buffer) => (tarErrors += chunk.toString()))
  const tarExit = new Promise<number>((done) => tar.on('close', (code) => done(code ?? 1)))
  try {
    // @types/dockerode types the answer as void; it is the progress stream.
    const stream = (await docker.importImage(tar.stdout as never, {
      repo, tag: importing.split(':')[1], changes,
    } as never)) as unknown as NodeJS.ReadableStream
    await followStream(docker, stream)
    const code = await tarExit
    if (code !== 0) throw new Error(`tar of ${root} exited with status ${code}: ${tarErrors.trim().slice(-500)}`)
    await docker.getImage(importing).tag({ repo, tag: version })
    return (await docker.getImage(tag).inspect()).Id
  } finally {
    tar.kill()
    await ignoring([404, 409], docker.getImage(importing).remove())
  }
}

const WORK_PREFIX = 'berth-debootstrap-'
/** A scratch folder older than this was left by a build that was killed. */
const STALE_WORK_MS = 6 * 3600_000

async function removeStaleWork(workDir: string): Promise<void> {
  for (const name of readdirSync(workDir)) {
    const path = join(workDir, name)
    if (name.startsWith(WORK_PREFIX) && Date.now() - statSync(path).mtimeMs > STALE_WORK_MS) await removeTree(path)
  }
}

/** A clean environment for debootstrap: a known PATH and locale, and the caller's proxy settings. */
function debootstrapEnv(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = { PATH: env.PATH ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C', DEBIAN_FRONTEND: 'noninteractive' }
  for (const name of ['http_proxy', 'https_proxy', 'no_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY']) {
    if (env[name]) out[name] = env[name] as string
  }
  return out
}

/**
 * Trims the root filesystem: package caches and lists, logs, translations and manuals go; the
 * SSH host keys generated by openssh-server's install go too (every site would share them; each
 * site gets its own when sshd starts for it); files Docker provides at run time are emptied.
 */
export function cleanRoot(root: string): void {
  const emptyDir = (dir: string, keepFiles = false) => {
    let entries
    try {
      entries = readdirSync(join(root, dir), { withFileTypes: true })
    } catch {
      return
    }
    for (const e of entries) if (!(keepFiles && e.isFile())) rmSync(join(root, dir, e.name), { recursive: true, force: true })
  }
  for (const dir of ['var/cache/apt', 'var/lib/apt/lists', 'var/log', 'usr/share/man', 'usr/share/info']) emptyDir(dir)
  emptyDir('usr/share/locale', true)
  const ssh = join(root, 'etc/ssh')
  for (const name of existsSync(ssh) ? readdirSync(ssh) : []) if (name.startsWith('ssh_host_')) rmSync(join(root, 'etc/ssh', name), { force: true })
  mkdirSync(join(root, 'var/lib/apt/lists/partial'), { recursive: true })
  for (const file of ['etc/resolv.conf', 'etc/hostname', 'etc/machine-id']) {
    // Removed first: the path may be a symlink, and writing through it could reach the host.
    rmSync(join(root, file), { force: true })
    writeFileSync(join(root, file), '', { flag: 'wx' })
  }
}

/**
 * Removes a scratch folder that debootstrap may have left with /proc or /sys of the host mounted
 * inside (when it fails mid-way): unmounts those first, and never crosses into another filesystem.
 */
export async function removeTree(dir: string): Promise<void> {
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)))
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
    .map((line) => unescape(line.split(' ')[4] ?? ''))
    .filter((m) => m.startsWith(dir + '/'))
    .sort((a, b) => b.length - a.length)
  for (const m of mounts) await run(['umount', '--lazy', m], { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' }).catch(() => {})
  await run(['rm', '-rf', '--one-file-system', dir], { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' })
}

/** Runs a program; on failure, the error carries the end of its output (and of debootstrap's log). */
async function run(argv: string[], env: Record<string, string>, root?: string): Promise<void> {
  let proc
  try {
    proc = Bun.spawn(argv, { env, stdout: 'pipe', stderr: 'pipe' })
  } catch {
    throw new Error(`${argv[0]} is not installed; apt-get install ${argv[0]}`)
  }
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  if (code === 0) return
  let log = ''
  try {
    if (root) log = readFileSync(join(root, 'debootstrap/debootstrap.log'), 'utf8')
  } catch {
    // no log: it failed before writing one
  }
  const tail = (out + err + log).trim().split('\n').slice(-15).join('\n')
  throw new Error(`${argv[0]} exited with status ${code}:\n${tail}`)
}

const seconds = (since: number) => ((Date.now() - since) / 1000).toFixed(1)
