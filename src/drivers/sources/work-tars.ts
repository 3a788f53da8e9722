import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * Where an uploaded archive's checked tar (archive.ts, toCheckedTar) waits between the API's
 * answer and its deployment's job, one file per deployment in Berth's data folder
 * (`DATA_DIR/deploy-work/{id}.tar`): kept across a restart of Berth, removed by the deployment
 * when it is over.
 */
export class DeployWorkFolder {
  constructor(readonly dir: string) {}

  /** The base path toCheckedTar is given for deployment `id` (it writes `{base}.tar`). */
  async base(id: string): Promise<string> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 })
    return join(this.dir, id)
  }

  /** The checked tar of deployment `id` as a stream, or null when it is not there. */
  tarOf(id: string): AsyncIterable<Uint8Array> | null {
    const file = Bun.file(join(this.dir, `${id}.tar`))
    return file.size > 0 ? (file.stream() as unknown as AsyncIterable<Uint8Array>) : null
  }

  async drop(id: string): Promise<void> {
    await rm(join(this.dir, `${id}.tar`), { force: true })
  }
}
