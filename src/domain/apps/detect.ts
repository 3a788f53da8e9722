import type { AppRuntime } from '../../core/enums'

/**
 * How a tree is built and run (issue 39, docs/api.md "Apps: detection"), decided from the files at
 * its root. Declared first: `berth.json` (every field optional) beats a `Procfile` (its
 * processes only, as Heroku reads it), which beats the detection table below. Pure: the tree's
 * root is read once in the container (release.ts) and handed here.
 */

/** What is read of a tree's root: its entries and the few files detection looks into. */
export interface TreeFacts {
  /** Names at the root; a folder's name ends with `/`. */
  entries: string[]
  /** The text of these files at the root, when present (at most 64 KiB each). */
  files: Partial<Record<'berth.json' | 'Procfile' | 'package.json' | 'requirements.txt', string>>
  /** Whether public/ holds an index.html or a .php file (a site's document root). */
  publicHas: { index: boolean; php: boolean }
}

export interface BuildPlan {
  runtime: AppRuntime
  /** Why this runtime: the file that decided, for the deployment's output. */
  because: string
  /** Shell commands run in the release, in order, as the site user, with the site's variables. */
  install: string | null
  build: string | null
  /** Run after the build and before the switch (berth.json `release`, Procfile `release:`): migrations. */
  release: string | null
  /** Name to shell command; `web` gets $PORT and the traffic. None for static and php trees. */
  processes: Record<string, string>
  /**
   * For static and php trees, the folder served, relative to the release; `null` when it is known
   * only after the build (a build that writes dist/, build/ or out/: STATIC_OUTPUTS).
   */
  staticRoot: string | null
  healthPath: string
  /** Folders kept across releases, each a link from the release to the same name in the home. */
  persistent: string[]
  stopGraceSeconds: number
}

/** Where a static build's output is looked for after it ran, in order. */
export const STATIC_OUTPUTS = ['dist', 'build', 'out', 'public'] as const
export const DEFAULT_PERSISTENT = ['data']
export const DEFAULT_STOP_GRACE_S = 10
const PROCESS_NAME = /^[a-z][a-z0-9_-]{0,29}$/
/** Folder names a tree may keep across releases: one plain name at the release's root. */
const PERSISTENT_NAME = /^(?!\.{1,2}$)[A-Za-z0-9._-]{1,64}$/
const RESERVED_PERSISTENT = new Set(['.berth', 'node_modules', '.venv', 'logs', '.git'])

/** A tree that detection cannot run, or a berth.json/Procfile it cannot read: the deployment fails with this. */
export class TreeRefusedError extends Error {}

/** Parses berth.json and the Procfile and applies the detection table. Throws TreeRefusedError. */
export function planBuild(tree: TreeFacts): BuildPlan {
  const declared = readBerthJson(tree.files['berth.json'])
  const procfile = readProcfile(tree.files['Procfile'])
  const detected = detect(tree, declared.runtime)
  const processes = declared.processes ?? (Object.keys(procfile.processes).length > 0 ? procfile.processes : detected.processes)
  const runtime = declared.runtime ?? detected.runtime
  const served = runtime === 'static' || runtime === 'php'
  if (!served && !processes.web) {
    throw new TreeRefusedError(`A ${runtime} app needs a web process, and none was found: add a "start" script to package.json, a "web:" line to a Procfile, or "processes": {"web": "..."} to berth.json.`)
  }
  return {
    runtime,
    because: declared.runtime ? 'berth.json names it' : detected.because,
    install: declared.install !== undefined ? declared.install : detected.install,
    build: declared.build !== undefined ? declared.build : detected.build,
    release: declared.release ?? procfile.release ?? null,
    processes: served ? {} : processes,
    staticRoot: declared.static_root ?? detected.staticRoot,
    healthPath: declared.health_path ?? '/',
    persistent: declared.persistent ?? DEFAULT_PERSISTENT,
    stopGraceSeconds: declared.stop_grace_seconds ?? DEFAULT_STOP_GRACE_S,
  }
}

interface Declared {
  runtime?: AppRuntime
  install?: string | null
  build?: string | null
  release?: string
  processes?: Record<string, string>
  static_root?: string
  health_path?: string
  persistent?: string[]
  stop_grace_seconds?: number
}

const RUNTIMES: readonly AppRuntime[] = ['node', 'bun', 'python', 'php', 'static']

function readBerthJson(text: string | undefined): Declared {
  if (text === undefined) return {}
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (err) {
    throw new TreeRefusedError(`berth.json is not valid JSON (${(err as Error).message}).`)
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new TreeRefusedError('berth.json must hold one JSON object.')
  const o = raw as Record<string, unknown>
  const known = new Set(['runtime', 'install', 'build', 'release', 'processes', 'static_root', 'health_path', 'persistent', 'stop_grace_seconds'])
  const unknown = Object.keys(o).filter((k) => !known.has(k))
  if (unknown.length > 0) throw new TreeRefusedError(`berth.json has unknown fields (${unknown.join(', ')}); it takes ${[...known].join(', ')}.`)
  const out: Declared = {}
  if (o.runtime !== undefined) {
    if (!RUNTIMES.includes(o.runtime as AppRuntime)) throw new TreeRefusedError(`berth.json: runtime must be one of ${RUNTIMES.join(', ')}.`)
    out.runtime = o.runtime as AppRuntime
  }
  for (const key of ['install', 'build'] as const) {
    if (o[key] === undefined) continue
    if (o[key] !== null && !command(o[key])) throw new TreeRefusedError(`berth.json: ${key} must be a shell command (a string up to 4096 characters) or null to skip it.`)
    out[key] = o[key] as string | null
  }
  if (o.release !== undefined) {
    if (!command(o.release)) throw new TreeRefusedError('berth.json: release must be a shell command (a string up to 4096 characters).')
    out.release = o.release as string
  }
  if (o.processes !== undefined) out.processes = checkProcesses(o.processes, 'berth.json: processes')
  if (o.static_root !== undefined) out.static_root = relativeFolder(o.static_root, 'static_root')
  if (o.health_path !== undefined) {
    if (typeof o.health_path !== 'string' || !/^\/[\x21-\x7e]{0,255}$/.test(o.health_path)) throw new TreeRefusedError('berth.json: health_path must be a path starting with / (printable characters, no spaces).')
    out.health_path = o.health_path
  }
  if (o.persistent !== undefined) {
    if (!Array.isArray(o.persistent) || o.persistent.length > 16) throw new TreeRefusedError('berth.json: persistent must be a list of at most 16 folder names.')
    for (const name of o.persistent) {
      if (typeof name !== 'string' || !PERSISTENT_NAME.test(name) || RESERVED_PERSISTENT.has(name)) {
        throw new TreeRefusedError(`berth.json: persistent names one folder at the release's root each (letters, digits, . _ -), not ${JSON.stringify(name)}; ${[...RESERVED_PERSISTENT].join(', ')} are not allowed.`)
      }
    }
    out.persistent = o.persistent as string[]
  }
  if (o.stop_grace_seconds !== undefined) {
    if (!Number.isInteger(o.stop_grace_seconds) || (o.stop_grace_seconds as number) < 1 || (o.stop_grace_seconds as number) > 60) throw new TreeRefusedError('berth.json: stop_grace_seconds must be a whole number from 1 to 60.')
    out.stop_grace_seconds = o.stop_grace_seconds as number
  }
  return out
}

const command = (v: unknown): v is string => typeof v === 'string' && v.trim() !== '' && v.length <= 4096 && !v.includes('\0')

function relativeFolder(v: unknown, field: string): string {
  const parts = typeof v === 'string' ? v.replace(/\/+$/, '').split('/') : []
  if (typeof v !== 'string' || v.length > 255 || v.startsWith('/') || (v !== '.' && parts.some((p) => p === '..' || p === '.' || p === ''))) {
    throw new TreeRefusedError(`berth.json: ${field} must be a folder of the tree, relative (e.g. "dist"), without "..".`)
  }
  return v.replace(/\/+$/, '')
}

function checkProcesses(v: unknown, where: string): Record<string, string> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new TreeRefusedError(`${where} must be an object of name to command.`)
  const entries = Object.entries(v as Record<string, unknown>)
  if (entries.length > 8) throw new TreeRefusedError(`${where}: at most 8 processes.`)
  for (const [name, cmd] of entries) {
    if (!PROCESS_NAME.test(name)) throw new TreeRefusedError(`${where}: process name ${JSON.stringify(name)} must be lowercase letters, digits, - or _, starting with a letter (at most 30).`)
    if (!command(cmd)) throw new TreeRefusedError(`${where}: the command of ${name} must be a non-empty string up to 4096 characters.`)
  }
  return Object.fromEntries(entries) as Record<string, string>
}

/** Heroku's Procfile: `name: command` lines; `release:` is the release command, not a process. */
function readProcfile(text: string | undefined): { processes: Record<string, string>; release: string | null } {
  if (text === undefined) return { processes: {}, release: null }
  const processes: Record<string, string> = {}
  let release: string | null = null
  for (const [i, line] of text.split(/\r?\n/).entries()) {
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue
    const m = /^([A-Za-z0-9_-]+):\s*(.+)$/.exec(line)
    if (!m) throw new TreeRefusedError(`Procfile line ${i + 1} is not "name: command".`)
    if (m[1] === 'release') release = m[2].trim()
    else processes[m[1].toLowerCase()] = m[2].trim()
  }
  return { processes: checkProcesses(processes, 'Procfile'), release }
}

type Detected = Pick<BuildPlan, 'runtime' | 'because' | 'install' | 'build' | 'processes' | 'staticRoot'>

function detect(tree: TreeFacts, declared: AppRuntime | undefined): Detected {
  const has = (name: string) => tree.entries.includes(name)
  const pkg = readPackageJson(tree.files['package.json'])
  const scripts = pkg?.scripts ?? {}
  const want = (r: AppRuntime) => declared === undefined || declared === r
  if ((has('bun.lock') || has('bun.lockb')) && want('bun') || declared === 'bun') {
    const install = pkg ? (has('bun.lock') || has('bun.lockb') ? 'bun install --frozen-lockfile' : 'bun install') : null
    const entry = ['index.ts', 'server.ts', 'index.js', 'server.js'].find(has)
    const web = scripts.start ? 'bun run start' : entry ? `bun ${entry}` : undefined
    return { runtime: 'bun', because: has('bun.lock') || has('bun.lockb') ? 'bun.lock' : 'berth.json', install, build: scripts.build ? 'bun run build' : null, processes: web ? { web } : {}, staticRoot: null }
  }
  if (pkg && (want('node') || want('static'))) {
    const pm = has('pnpm-lock.yaml') ? 'pnpm' : has('yarn.lock') ? 'yarn' : 'npm'
    const install = pm === 'pnpm' ? 'corepack pnpm install --frozen-lockfile' : pm === 'yarn' ? 'corepack yarn install --frozen-lockfile'
      : has('package-lock.json') || has('npm-shrinkwrap.json') ? 'npm ci' : 'npm install'
    const run = (s: string) => (pm === 'npm' ? `npm run ${s}` : `corepack ${pm} run ${s}`)
    const build = scripts.build ? run('build') : null
    const entry = ['server.js', 'index.js', 'app.js', 'main.js'].find(has) ?? (typeof pkg.main === 'string' && /^[\w./-]+$/.test(pkg.main) && !pkg.main.includes('..') ? pkg.main : undefined)
    const web = scripts.start ? (pm === 'npm' ? 'npm start' : run('start')) : entry ? `node ${entry}` : undefined
    if (declared === 'static' || (!web && build)) {
      return { runtime: 'static', because: 'package.json with a build script and no start script: its output is served', install, build, processes: {}, staticRoot: null }
    }
    return { runtime: 'node', because: `package.json (${pm})`, install, build, processes: web ? { web } : {}, staticRoot: null }
  }
  if ((has('requirements.txt') || has('pyproject.toml')) && want('python') || declared === 'python') {
    const reqs = (tree.files['requirements.txt'] ?? '').split('\n').some((l) => l.trim() !== '' && !l.trim().startsWith('#'))
    const install = ['python3 -m venv .venv', ...(reqs ? ['.venv/bin/pip install --no-input -r requirements.txt'] : []), ...(has('pyproject.toml') && !has('requirements.txt') ? ['.venv/bin/pip install --no-input .'] : [])].join(' && ')
    const entry = ['app.py', 'main.py', 'server.py', 'wsgi.py'].find(has)
    return { runtime: 'python', because: has('requirements.txt') ? 'requirements.txt' : 'pyproject.toml', install, build: null, processes: entry ? { web: `python ${entry}` } : {}, staticRoot: null }
  }
  const php = has('composer.json') || tree.entries.some((e) => e.endsWith('.php')) || tree.publicHas.php
  if (php && want('php') || declared === 'php') {
    return { runtime: 'php', because: has('composer.json') ? 'composer.json' : '.php files', install: null, build: null, processes: {}, staticRoot: tree.publicHas.php || tree.publicHas.index ? 'public' : '.' }
  }
  if (has('index.html') || tree.publicHas.index || declared === 'static') {
    return { runtime: 'static', because: 'only static files', install: null, build: null, processes: {}, staticRoot: tree.publicHas.index ? 'public' : '.' }
  }
  if (declared) return { runtime: declared, because: 'berth.json', install: null, build: null, processes: {}, staticRoot: null }
  throw new TreeRefusedError('Berth could not tell how to run this tree: no package.json, bun.lock, requirements.txt, pyproject.toml, composer.json, .php file or index.html at its root. Add a berth.json ({"runtime": ..., "processes": {"web": ...}}) or a Procfile.')
}

interface PackageJson {
  scripts?: Record<string, string>
  main?: unknown
}

function readPackageJson(text: string | undefined): PackageJson | null {
  if (text === undefined) return null
  try {
    const raw = JSON.parse(text) as unknown
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new Error('not an object')
    const scripts = (raw as PackageJson).scripts
    return { scripts: scripts && typeof scripts === 'object' ? Object.fromEntries(Object.entries(scripts).filter(([, v]) => typeof v === 'string')) : {}, main: (raw as PackageJson).main }
  } catch (err) {
    throw new TreeRefusedError(`package.json is not a JSON object (${(err as Error).message}).`)
  }
}
