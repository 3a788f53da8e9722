import { constants as C, promises as fs } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'

/**
 * Opening files inside a tenant's home from the host without following a symlink the tenant
 * planted. Every component below the trusted root is opened with O_NOFOLLOW relative to its
 * parent's open descriptor, through `/proc/self/fd/N/name` (Linux's openat without openat):
 * renaming a folder or swapping it for a symlink between two steps changes nothing, as the next
 * step looks the name up in the folder already open (the lesson of pterodactyl/wings' symlink
 * escape advisories, style.md). Linux only, like Berth.
 */

/** A FIFO planted as a log would block a plain open for reading; O_NONBLOCK returns at once. */
const FILE_FLAGS = C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK
const DIR_FLAGS = C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW

/** The name is a symlink, or not what was asked for (a folder where a file was expected...). */
export class NotRegularError extends Error {}

/** The path through an open descriptor: what `openat(fd, name)` would look up. */
export const beneath = (dir: FileHandle, name: string) => `/proc/self/fd/${dir.fd}/${name}`

/** Opens the trusted root (a Docker volume's mount point) as a folder. */
export function openRoot(root: string): Promise<FileHandle> {
  return fs.open(root, C.O_RDONLY | C.O_DIRECTORY)
}

/**
 * Opens the folder `name` inside the open folder `dir`, refusing a symlink (NotRegularError).
 * Throws ENOENT as it comes when the name does not exist.
 */
export async function openDirIn(dir: FileHandle, name: string): Promise<FileHandle> {
  checkName(name)
  try {
    return await fs.open(beneath(dir, name), DIR_FLAGS)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    // O_NOFOLLOW on a symlink fails with ELOOP; O_DIRECTORY on anything else but a folder, ENOTDIR.
    if (code === 'ELOOP' || code === 'ENOTDIR') throw new NotRegularError(`'${name}' is not a folder`)
    throw err
  }
}

/**
 * Opens `root/dirs.../file` for reading; resolves null when any part is missing. Throws
 * NotRegularError when a part is a symlink or the file is not a regular file (FIFO, socket,
 * folder).
 */
export async function openFileBeneath(root: string, dirs: string[], file: string): Promise<FileHandle | null> {
  checkName(file)
  const opened: FileHandle[] = []
  try {
    let dir = await openRoot(root)
    opened.push(dir)
    for (const name of dirs) {
      dir = await openDirIn(dir, name)
      opened.push(dir)
    }
    let handle: FileHandle
    try {
      handle = await fs.open(beneath(dir, file), FILE_FLAGS)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ELOOP') throw new NotRegularError(`'${file}' is a symlink`)
      throw err
    }
    if (!(await handle.stat()).isFile()) {
      await handle.close()
      throw new NotRegularError(`'${file}' is not a regular file`)
    }
    return handle
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  } finally {
    await Promise.all(opened.map((h) => h.close().catch(() => {})))
  }
}

function checkName(name: string) {
  if (!name || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) throw new Error(`Not a single path component: ${JSON.stringify(name)}`)
}
