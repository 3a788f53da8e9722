import { createReadStream, createWriteStream } from 'node:fs'
import { lstat, mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { checkHomeArchive } from './tar-members'

/**
 * The databases' dumps inside a site's archive (issue 40, docs/api.md "Databases"): a folder
 * `.berth-databases/` at the root of the home's tarball, holding `manifest.json` and one file per
 * database (`{name}.{engine}`, the engine's own dump format). The DumpFiles of
 * domain/archives/tarballs.ts: GNU tar on the host, the dumps in a folder of the work folder.
 *
 * The name is one the home's tar leaves out and its restore keeps (home-tar.ts keptOf): a site's
 * own `.berth-databases` is never archived nor replaced, so it cannot pass for Berth's dumps.
 */
export const DUMPS_FOLDER = '.berth-databases'
const MANIFEST = 'manifest.json'

/** Makes `dir` empty (mode 0700), with its dumps folder in it; answers the dumps folder. */
export async function freshDumps(dir: string): Promise<string> {
  await rm(dir, { recursive: true, force: true })
  await mkdir(join(dir, DUMPS_FOLDER), { recursive: true, mode: 0o700 })
  return join(dir, DUMPS_FOLDER)
}

/** A stream writing the dump file `file` of the dumps folder of `dir` (created or truncated). */
export function dumpWriter(dir: string, file: string): NodeJS.WritableStream {
  return createWriteStream(join(dir, DUMPS_FOLDER, file), { mode: 0o600, highWaterMark: 1 << 20 })
}

/** A stream reading the dump file `file` of the dumps folder of `dir`: a regular file only. */
export async function dumpReader(dir: string, file: string): Promise<NodeJS.ReadableStream> {
  const path = join(dir, DUMPS_FOLDER, file)
  const st = await lstat(path)
  if (!st.isFile()) throw new Error(`${file} in the archive's dumps is not a file`)
  return createReadStream(path, { highWaterMark: 1 << 20 })
}

export async function writeManifest(dir: string, manifest: unknown): Promise<void> {
  await writeFile(join(dir, DUMPS_FOLDER, MANIFEST), JSON.stringify(manifest), { mode: 0o600 })
}

/** The manifest of the dumps folder of `dir`; null when there is none (an archive without databases). */
export async function readManifest(dir: string): Promise<unknown | null> {
  const path = join(dir, DUMPS_FOLDER, MANIFEST)
  const st = await lstat(path).catch(() => null)
  if (!st?.isFile()) return null
  return JSON.parse(await readFile(path, 'utf8'))
}

/** Appends the dumps folder of `dir` to the uncompressed tar `tarFile` as `./.berth-databases/`. */
export async function appendDumps(tarFile: string, dir: string): Promise<void> {
  await run(['tar', '--append', '--file', tarFile, '--numeric-owner', '--owner=0', '--group=0', '--directory', dir, `./${DUMPS_FOLDER}`])
}

/**
 * Takes the dumps out of the uncompressed tar `tarFile` into `dir` (made empty first), and
 * removes them from the tar, so what is left is the home's files alone (replaceHome refuses a
 * member under a kept name). The whole archive is checked first as a home's (no member outside
 * `./`, beneath a link, no device); answers false when it holds no dumps.
 */
export async function takeDumps(tarFile: string, dir: string): Promise<boolean> {
  await checkHomeArchive(tarFile, new Set())
  await freshDumps(dir)
  if (!(await holdsDumps(tarFile))) return false
  await run(['tar', '--extract', '--file', tarFile, '--directory', dir, '--no-same-owner', '--no-same-permissions', `./${DUMPS_FOLDER}`])
  await run(['tar', '--delete', '--file', tarFile, `./${DUMPS_FOLDER}`])
  return true
}

async function holdsDumps(tarFile: string): Promise<boolean> {
  const proc = Bun.spawn(['tar', '--list', '--file', tarFile], { stdin: 'ignore', stdout: 'pipe', stderr: 'ignore' })
  const [out] = await Promise.all([new Response(proc.stdout).text(), proc.exited])
  return out.split('\n').some((line) => line === `./${DUMPS_FOLDER}/` || line.startsWith(`./${DUMPS_FOLDER}/`))
}

/** Removes the folder `dir` and all in it; missing: no-op. */
export async function clearDumps(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true })
}

async function run(cmd: string[]): Promise<void> {
  const proc = Bun.spawn(cmd, { stdin: 'ignore', stdout: 'ignore', stderr: 'pipe' })
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`${cmd[0]} ${cmd[1]} failed (exit ${code}): ${stderr.trim().split('\n').slice(-3).join('; ') || 'no message'}`)
}

/** The DumpFiles of domain/archives/tarballs.ts. */
export const tarDumps = { freshDumps, dumpWriter, dumpReader, writeManifest, readManifest, appendDumps, takeDumps, clearDumps }
