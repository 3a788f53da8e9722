import { mkdir, readdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * The archive jobs' work folder on the local disk (`{archives.dir}/.work`, mode 0700): the
 * WorkFolder of domain/archives/tarballs.ts. Names are the jobs' own (`{archive_id}.tar.zst`),
 * never a tenant's.
 */
export class LocalWorkFolder {
  constructor(readonly dir: string) {}

  path(name: string): string {
    return join(this.dir, name)
  }

  async prepare(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 })
  }

  async list(): Promise<string[]> {
    return readdir(this.dir).catch(() => [] as string[])
  }

  async size(name: string): Promise<number> {
    return (await stat(this.path(name))).size
  }

  /** A file, or a folder with all in it (a job's dumps, `{archive_id}.dumps`). */
  async remove(...names: string[]): Promise<void> {
    await Promise.all(names.map((name) => rm(this.path(name), { recursive: true, force: true })))
  }
}
