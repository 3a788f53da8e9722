import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'

/**
 * Fills a debootstrap `--cache-dir` with the packages it is about to install, downloading many
 * at once.
 *
 * Why: debootstrap fetches one package after another; from here that took 2.5 of its 5 minutes
 * (about 150 packages, each paying a round trip). Debootstrap takes a cached .deb whose checksum
 * matches its own signed package index and downloads anything else itself, so this step needs
 * neither trust nor precision: a package it misses is fetched by debootstrap, a package it adds
 * is ignored, a corrupt file is replaced.
 */
export interface PrefetchOptions {
  mirror: string
  suite: string
  arch: string
  /** Packages named with --include. */
  include: string[]
  cacheDir: string
  /** Downloads at once. */
  concurrency?: number
}

interface Stanza {
  package: string
  version: string
  arch: string
  filename: string
  size: number
  priority: string
  depends: string[][]
  provides: string[]
}

/** Downloads what is missing into `cacheDir`, removes stale files; returns counts. */
export async function prefetchDebs(opts: PrefetchOptions): Promise<{ wanted: number; downloaded: number }> {
  const index = await fetchIndex(opts)
  const wanted = resolveMinbase(index, opts.include)
  mkdirSync(opts.cacheDir, { recursive: true })
  const names = new Map(wanted.map((s) => [cacheName(s), s]))
  // Older versions of the packages wanted go; other files stay: debootstrap may have fetched them
  // itself where its choice among alternatives differs from ours.
  const wantedPackages = new Set(wanted.map((s) => s.package))
  for (const file of readdirSync(opts.cacheDir)) {
    if (!names.has(file) && !file.endsWith('.part') && wantedPackages.has(file.split('_')[0])) rmSync(join(opts.cacheDir, file), { force: true })
  }
  const missing = [...names].filter(([file, s]) => !existsSync(join(opts.cacheDir, file)) || statSync(join(opts.cacheDir, file)).size !== s.size)
  let next = 0
  const worker = async () => {
    while (next < missing.length) {
      const [file, s] = missing[next++]
      await download(`${opts.mirror}/${s.filename}`, join(opts.cacheDir, file))
    }
  }
  await Promise.all(Array.from({ length: opts.concurrency ?? 8 }, worker))
  return { wanted: wanted.length, downloaded: missing.length }
}

/** The name debootstrap gives a package in its cache dir (functions: download_debs). */
const cacheName = (s: Stanza) => `${s.package}_${s.version}_${s.arch}.deb`.replace(/:/g, '%3a')

async function fetchIndex(opts: PrefetchOptions): Promise<Map<string, Stanza>> {
  const url = `${opts.mirror}/dists/${opts.suite}/main/binary-${opts.arch}/Packages.gz`
  const res = await fetch(url)
  if (!res.ok) throw new Error(`GET ${url} answered ${res.status}`)
  const text = new TextDecoder().decode(Bun.gunzipSync(new Uint8Array(await res.arrayBuffer())))
  const index = new Map<string, Stanza>()
  for (const block of text.split('\n\n')) {
    const f = fields(block)
    if (!f.Package || !f.Filename) continue
    index.set(f.Package, {
      package: f.Package,
      version: f.Version,
      arch: f.Architecture,
      filename: f.Filename,
      size: Number(f.Size),
      priority: f.Priority ?? '',
      depends: [f['Pre-Depends'], f.Depends].filter(Boolean).flatMap((d) => d.split(',')).map((alt) => alt.split('|').map(nameOf)),
      provides: (f.Provides ?? '').split(',').map(nameOf).filter(Boolean),
    })
  }
  return index
}

/**
 * What `debootstrap --variant=minbase` installs, approximately: every `Priority: required`
 * package, apt, the includes, and their dependencies (first alternative that exists).
 */
export function resolveMinbase(index: Map<string, Stanza>, include: string[]): Stanza[] {
  const provided = new Map<string, string>()
  for (const s of index.values()) for (const p of s.provides) if (!provided.has(p)) provided.set(p, s.package)
  const lookup = (name: string) => index.get(name) ?? index.get(provided.get(name) ?? '')
  const seen = new Map<string, Stanza>()
  const queue = [...[...index.values()].filter((s) => s.priority === 'required').map((s) => s.package), 'apt', ...include]
  while (queue.length > 0) {
    const s = lookup(queue.pop()!)
    if (!s || seen.has(s.package)) continue
    seen.set(s.package, s)
    for (const alternatives of s.depends) {
      const pick = alternatives.find((a) => lookup(a))
      if (pick) queue.push(pick)
    }
  }
  return [...seen.values()]
}

function fields(block: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const line of block.split('\n')) {
    const m = /^([A-Za-z0-9-]+):\s*(.*)$/.exec(line)
    if (m) out[m[1]] = m[2]
  }
  return out
}

/** `libc6 (>= 2.34)` and `python3:any` → the bare package name. */
const nameOf = (dep: string) => dep.trim().split(/[\s(:]/)[0]

async function download(url: string, dest: string): Promise<void> {
  const res = await fetch(url)
  if (!res.ok) throw new Error(`GET ${url} answered ${res.status}`)
  // A name of its own: two builds may share the cache folder.
  const part = `${dest}.${process.pid}-${Math.random().toString(36).slice(2)}.part`
  await Bun.write(part, res)
  renameSync(part, dest)
}
