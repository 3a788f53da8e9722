import { createReadStream, createWriteStream } from 'node:fs'
import { chmod, chown, lstat, mkdir, open, readdir, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { constants, createZstdCompress, createZstdDecompress } from 'node:zlib'
import { DUMPS_FOLDER } from './db-dumps'
import { checkHomeArchive } from './tar-members'

/**
 * A site's home as a tarball, and back, with GNU tar on the host (Berth runs as root, so owners,
 * modes, symlinks and hard links come back exactly; uid 1000 stays uid 1000 with
 * `--numeric-owner`, whatever the host's /etc/passwd says).
 *
 * Left out of every archive, at the root of the home:
 * - `logs/`: the web server's and PHP's logs are a record of what happened, not the site's state;
 *   a restore keeps the current logs.
 * - MOVING, ASIDE and STAGING: where a restore parks the current files and unpacks the new ones
 *   (below).
 * - `.berth-databases`: the name under which an archive holds its site's database dumps
 *   (./db-dumps.ts), appended by Berth after the home's files and taken out before a restore: a
 *   site's own folder of that name is neither archived nor replaced, so it never passes for them.
 *
 * A caller may leave out more names at the root (`keep`): a deployment's record of the files
 * leaves out `.ssh/` as well (domain/deployments/files.ts), and its rollback keeps it.
 */
const MOVING = '.berth-restore-moving'
const ASIDE = '.berth-restore-previous'
const STAGING = '.berth-restore-incoming'
const OURS = [MOVING, ASIDE, STAGING]

/** The names at the root of the home an archive leaves out, and a restore keeps. */
const keptOf = (keep: readonly string[]) => new Set(['logs', DUMPS_FOLDER, ...OURS, ...keep])
const excludesOf = (kept: Set<string>) => [...kept].map((name) => `--exclude=./${name}`)

/**
 * Writes the home as an uncompressed tar to `outFile`. Meant to run while the site is frozen:
 * from the page cache it costs ~0.3 s per 100 MB here, so the freeze stays short; compress after
 * thawing. Sockets are skipped (tar says so on stderr and exits 0).
 */
export async function tarHome(home: string, outFile: string, keep: readonly string[] = []): Promise<void> {
  await run(tarHomeCommand(home, outFile, keep))
}

/**
 * The command tarHome runs: GNU tar writing the home to `outFile` (`-` for its stdout: a node's
 * agent streams it to the control plane, drivers/files/home-agent.ts).
 */
export function tarHomeCommand(home: string, outFile: string, keep: readonly string[] = []): string[] {
  return ['tar', '--create', '--file', outFile, '--numeric-owner', '--directory', home, ...excludesOf(keptOf(keep)), '.']
}

/**
 * Replaces the files of the home with those of `tarFile`, keeping `logs` and the names in `keep`
 * (each only while it is a real folder: a kept name that is a link, or a file, goes with the old
 * files, never followed). The site must not be running: nothing may touch the home meanwhile.
 *
 * Nothing is ever written outside the home, as root, whatever the archive holds and whatever
 * links the home has:
 * 1. The archive is checked first (./tar-members.ts): a member outside `./`, under a kept name,
 *    beneath an earlier symbolic link, a device or a hard link to anything but an earlier member
 *    refuses it with UnsafeArchiveError, saying which and why; the home is untouched.
 * 2. It is extracted into STAGING, a folder Berth makes empty in the home (so on the same
 *    volume), never into the home itself: no link of the home is on the way of any member.
 *    Should tar fail, STAGING is removed and the home is untouched.
 * 3. The current files (all but the kept folders) are moved into MOVING, which is then renamed
 *    ASIDE; STAGING's entries are renamed into the home, the home takes the owner and mode of
 *    the archive's `./`, and ASIDE and STAGING are removed (`rm` unlinks links, never follows
 *    them). Renames on one volume: the swap is instant.
 *
 * Safe to run again after a crash part-way. The three folders are created by Berth as root, mode
 * 0700, which the site user (uid 1000, no capabilities) cannot do. A root-owned ASIDE is a
 * previous attempt's, cut short after the move: it holds the real previous files, and what the
 * home holds besides is a half-done swap, removed; a root-owned MOVING is one cut short during
 * the move, and the move goes on. Anything else of those names is the site's own and is removed
 * first, so nothing is ever moved into a symlink the site planted. STAGING is always made anew.
 */
export async function replaceHome(home: string, tarFile: string, keep: readonly string[] = []): Promise<void> {
  const kept = keptOf(keep)
  await checkHomeArchive(tarFile, kept)
  const staging = join(home, STAGING)
  await rm(staging, { recursive: true, force: true })
  await mkdir(staging, { mode: 0o700 })
  try {
    await run(['tar', '--extract', '--file', tarFile, '--directory', staging, '--numeric-owner', '--same-owner', '--preserve-permissions'])
  } catch (err) {
    await rm(staging, { recursive: true, force: true })
    throw err
  }
  const aside = join(home, ASIDE)
  const moving = join(home, MOVING)
  if (await isOurs(aside)) {
    await clearHome(home, kept)
  } else {
    await rm(aside, { recursive: true, force: true })
    if (!(await isOurs(moving))) {
      await rm(moving, { recursive: true, force: true })
      await mkdir(moving, { mode: 0o700 })
    }
    for (const name of await movable(home, kept)) await rename(join(home, name), join(moving, name))
    await rename(moving, aside)
  }
  // The checked archive holds no kept name; the test is for what else could have put one there.
  for (const name of await readdir(staging)) if (!kept.has(name)) await rename(join(staging, name), join(home, name))
  const root = await lstat(staging)
  if (root.uid !== 0 || (root.mode & 0o7777) !== 0o700) {
    // The archive has its `./`: the home is as it says (tar set STAGING so).
    await chown(home, root.uid, root.gid)
    await chmod(home, root.mode & 0o7777)
  }
  await rm(staging, { recursive: true, force: true })
  await rm(aside, { recursive: true, force: true })
}

/** A folder Berth made: a directory (not a symlink) owned by root with mode 0700. */
async function isOurs(path: string): Promise<boolean> {
  const st = await lstat(path).catch(() => null)
  return st !== null && st.isDirectory() && st.uid === 0 && (st.mode & 0o777) === 0o700
}

/**
 * Entries at the root of the home an archive replaces: all but Berth's folders and the kept
 * names that are real folders (a kept name that is a link, or anything else, is replaced: moved
 * aside with the old files, and so never followed).
 */
async function movable(home: string, kept: Set<string>): Promise<string[]> {
  const names: string[] = []
  for (const name of await readdir(home)) {
    if (OURS.includes(name)) continue
    if (kept.has(name) && (await lstat(join(home, name))).isDirectory()) continue
    names.push(name)
  }
  return names
}

/** Removes every entry an archive replaces; `rm` unlinks symlinks, it never follows them. */
async function clearHome(home: string, kept: Set<string>): Promise<void> {
  for (const name of await movable(home, kept)) await rm(join(home, name), { recursive: true, force: true })
}

export interface TarCounts {
  /** Regular files and hard links. */
  files: number
  /** Their total size in bytes. */
  bytes: number
}

/**
 * Counts the files of an uncompressed tar by walking its 512-byte headers (no data is read).
 * Understands ustar, GNU (long-name `L`/`K` entries, base-256 sizes) and pax (`x`/`g`) headers.
 */
export async function scanTar(file: string): Promise<TarCounts> {
  const handle = await open(file, 'r')
  const header = Buffer.alloc(512)
  const counts: TarCounts = { files: 0, bytes: 0 }
  try {
    for (let pos = 0; ; ) {
      const { bytesRead } = await handle.read(header, 0, 512, pos)
      if (bytesRead < 512 || header.every((b) => b === 0)) return counts
      const size = headerSize(header)
      const type = String.fromCharCode(header[156])
      if (type === '0' || type === '\0' || type === '7' || type === '1') {
        counts.files++
        if (type !== '1') counts.bytes += size
      }
      // A hard link's header carries no data whatever its size field says.
      pos += 512 + (type === '1' ? 0 : Math.ceil(size / 512) * 512)
    }
  } finally {
    await handle.close()
  }
}

function headerSize(h: Buffer): number {
  const field = h.subarray(124, 136)
  if (field[0] & 0x80) {
    // GNU base-256: big-endian binary in the remaining bytes.
    let n = 0
    for (let i = 1; i < field.length; i++) n = n * 256 + field[i]
    return n
  }
  const text = field.toString('latin1').replace(/\0.*$/s, '').trim()
  return text ? parseInt(text, 8) : 0
}

/**
 * Streams move 1 MiB at a time: with the 64 KiB default, compressing 100 MiB took 230-320 ms
 * here, with 1 MiB 140-150 ms (4 MiB was slower again).
 */
const CHUNK = 1 << 20

/**
 * zstd at level 3: several hundred MB/s on one core for incompressible data, more for text, and
 * off the event loop (Bun's zlib streams compress on a worker thread).
 */
export async function compressFile(from: string, to: string): Promise<void> {
  await pipeline(createReadStream(from, { highWaterMark: CHUNK }), createZstdCompress({ chunkSize: CHUNK, params: { [constants.ZSTD_c_compressionLevel]: 3 } }), createWriteStream(to, { highWaterMark: CHUNK }))
}

export async function decompressFile(from: string, to: string): Promise<void> {
  await pipeline(createReadStream(from, { highWaterMark: CHUNK }), createZstdDecompress({ chunkSize: CHUNK }), createWriteStream(to, { highWaterMark: CHUNK }))
}

/** Runs a command; throws with the tail of its stderr when it exits non-zero. */
async function run(cmd: string[]): Promise<void> {
  const proc = Bun.spawn(cmd, { stdin: 'ignore', stdout: 'ignore', stderr: 'pipe' })
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) {
    const tail = stderr.trim().split('\n').slice(-3).join('; ')
    throw new Error(`${cmd[0]} ${cmd[1]} failed (exit ${code}): ${tail || 'no message'}`)
  }
}

/** The HomeTarballs of domain/archives/tarballs.ts: GNU tar on the host, zstd in process. */
export const gnuTar = { tarHome, replaceHome, scanTar, compressFile, decompressFile }
