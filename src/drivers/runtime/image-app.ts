import { spawn as spawnNode } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { FRONT_PY } from './app-front'
import { PORTS_PY } from './app-ports'
import { PROCS_PY } from './app-processes'
import { runtimesDefinition, stageRuntimes } from './app-runtimes'
import { DAEMON_PY } from './app-supervisor'
import { BERTH_ENV_PY, PRE_RECEIVE_PY, SUPERVISE_PY } from './app-verbs'
import type { DebianRecipe } from './debian-base'
import { defaultPhpPage } from './default-page'
import { homeRepair } from './image-home'
import { FPM_CHILDREN, PHP_FPM_CONF, SSHD_CONF, SSHD_START } from './image-php'
import { makeTar, type TarEntry } from './tar'

const SITE = { uid: 1000, gid: 1000 }

/**
 * berth/app:1's Debian base (its own tag, berth/app-base:bookworm-{hash}): what berth/php has,
 * plus Python 3 with venv, git (git push, sources fetched in the container) and the CA
 * certificates every package manager needs; curl and procps for the site's own shell; the
 * databases' clients (psql, mariadb, redis-cli) and PHP's extensions, as berth/php has.
 */
export const APP_BASE: DebianRecipe = {
  suite: 'bookworm',
  arch: 'amd64',
  include: ['nginx-light', 'php-fpm', 'openssh-server', 'python3', 'python3-venv', 'git', 'ca-certificates', 'curl', 'procps', 'php-mysql', 'php-pgsql', 'php-redis', 'php-xml', 'php-mbstring', 'php-curl', 'php-gd', 'php-zip', 'php-intl', 'php-bcmath', 'postgresql-client-15', 'mariadb-client', 'redis-tools'],
  cleanup: 1,
}

export const APP_BASE_REPO = 'berth/app-base'

/** The image's PATH: the site's own tools first, then Node (npm, npx, corepack's pnpm and yarn), Bun, Debian's. */
export const APP_PATH = '/home/site/.local/bin:/opt/node/bin:/opt/bun/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

/**
 * berth-start, the CMD under docker-init: the home repaired as the other images do (and ~/app,
 * ~/data), PHP-FPM's size from the memory limit, sshd on vps plans exactly as berth/php, then the
 * supervisor in its place (exec), so docker stop's SIGTERM reaches it through docker-init.
 */
export const APP_START = `#!/bin/bash
set -u
${homeRepair(['error.log', 'access.log', 'php.log', 'ssh.log', 'app.log'])}aside_unless_dir app
aside_unless_dir data
${FPM_CHILDREN}${SSHD_START}exec /usr/local/bin/berth-supervise daemon
`

/** Login shells (ssh) read /etc/profile, which resets PATH: the image's comes back here. */
const PROFILE = `# berth/app: the runtimes on the PATH of login shells too.
export PATH=${APP_PATH}
`

export function appDockerfile(baseTag: string): string {
  return `FROM ${baseTag}
RUN groupadd --gid 1000 site \\
 && useradd --uid 1000 --gid 1000 --home-dir /home/site --no-create-home --shell /bin/bash site \\
 && usermod -p '*' site \\
 && ln -s "$(ls /usr/sbin/php-fpm* | head -n 1)" /usr/local/sbin/php-fpm
COPY opt /opt
ADD rootfs.tar /
RUN python3 -m compileall -q /usr/local/lib/berth && update-ca-certificates >/dev/null
ENV HOME=/home/site \\
    PATH=${APP_PATH} \\
    NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \\
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \\
    NPM_CONFIG_PREFIX=/home/site/.local \\
    NPM_CONFIG_UPDATE_NOTIFIER=false \\
    COREPACK_ENABLE_DOWNLOAD_PROMPT=0 \\
    COREPACK_ENABLE_AUTO_PIN=0 \\
    PYTHONUNBUFFERED=1
USER 1000:1000
WORKDIR /home/site
EXPOSE 8080 2222
CMD ["/usr/local/bin/berth-start"]
`
}

/** Where Debian (the host's, and the image's) keeps the box's own certificate authorities. */
export const LOCAL_CAS = '/usr/local/share/ca-certificates'

/**
 * The box's own certificate authorities (`*.crt` in /usr/local/share/ca-certificates on the host
 * that builds the image, the folder update-ca-certificates reads): a box whose outbound HTTPS
 * goes through an inspecting proxy trusts its CA, and its sites' package managers must too. Each
 * is added to the image's bundle; Node reads that bundle through NODE_EXTRA_CA_CERTS, pip through
 * PIP_CERT, git, curl and Python's ssl directly.
 */
export function hostCas(dir = LOCAL_CAS): Record<string, string> {
  if (!existsSync(dir)) return {}
  const out: Record<string, string> = {}
  for (const name of readdirSync(dir).sort()) if (name.endsWith('.crt')) out[name] = readFileSync(join(dir, name), 'utf8')
  return out
}

/** The files berth/app adds on its base (rootfs.tar of the context), with the box's CAs (hostCas). */
export function appOverlay(cas: Record<string, string> = hostCas()): Uint8Array {
  const lib = (path: string, data: string, mode = 0o644): TarEntry => ({ type: 'file', path: `usr/local/lib/berth/${path}`, data, mode })
  const overlay: TarEntry[] = [
    { type: 'dir', path: 'etc/berth', mode: 0o755 },
    { type: 'file', path: 'etc/berth/php-fpm.conf', data: PHP_FPM_CONF },
    { type: 'file', path: 'etc/berth/sshd_config', data: SSHD_CONF },
    { type: 'file', path: 'etc/profile.d/berth-path.sh', data: PROFILE },
    { type: 'dir', path: 'usr/local/lib/berth', mode: 0o755 },
    lib('berth_daemon.py', DAEMON_PY),
    lib('berth_procs.py', PROCS_PY),
    lib('berth_front.py', FRONT_PY),
    lib('berth_ports.py', PORTS_PY),
    lib('pre-receive', PRE_RECEIVE_PY, 0o755),
    { type: 'file', path: 'usr/local/bin/berth-start', data: APP_START, mode: 0o755 },
    { type: 'file', path: 'usr/local/bin/berth-supervise', data: SUPERVISE_PY, mode: 0o755 },
    { type: 'file', path: 'usr/local/bin/berth-env', data: BERTH_ENV_PY, mode: 0o755 },
    { type: 'symlink', path: 'usr/local/bin/python', target: '/usr/bin/python3' },
    { type: 'dir', path: 'home/site', mode: 0o755, ...SITE },
    { type: 'dir', path: 'home/site/public', mode: 0o755, ...SITE },
    { type: 'dir', path: 'home/site/logs', mode: 0o755, ...SITE },
    { type: 'file', path: 'home/site/public/index.php', data: defaultPhpPage(), mode: 0o644, ...SITE },
    ...Object.entries(cas).map(([name, data]): TarEntry => ({ type: 'file', path: `${LOCAL_CAS.slice(1)}/${name}`, data, mode: 0o644 })),
  ]
  return makeTar(overlay)
}

/** Everything berth/app is made of but its base's id: a change here makes a new image. */
export function appDefinitionParts(baseTag: string): string[] {
  return [appDockerfile(baseTag), Buffer.from(appOverlay()).toString('base64'), runtimesDefinition()]
}

/**
 * Lays the build context out in a scratch folder under `workDir` (Dockerfile, rootfs.tar, and
 * the runtimes under opt/, about 350 MB unpacked) and returns it with a stream of it as a tar,
 * which the engine's build reads: nothing that size is held in memory.
 */
export async function stageAppContext(baseTag: string, workDir: string, npmCacheDir: string, progress: (line: string) => void, env: Record<string, string>): Promise<string> {
  mkdirSync(workDir, { recursive: true })
  const stage = mkdtempSync(join(workDir, 'berth-app-context-'))
  writeFileSync(join(stage, 'Dockerfile'), appDockerfile(baseTag))
  writeFileSync(join(stage, 'rootfs.tar'), appOverlay())
  await stageRuntimes(stage, npmCacheDir, progress, env)
  return stage
}

/** `tar -c` of a staged context, for the engine's build (POST /build reads it as it comes). */
export function contextStream(stage: string, env: Record<string, string>): { stream: NodeJS.ReadableStream; done: Promise<number> } {
  const tar = spawnNode('tar', ['--numeric-owner', '-C', stage, '-cf', '-', '.'], { stdio: ['ignore', 'pipe', 'ignore'], env })
  return { stream: tar.stdout, done: new Promise((resolve) => tar.on('close', (code) => resolve(code ?? 1))) }
}
