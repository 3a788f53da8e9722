import { readdir } from 'node:fs/promises'

/** What of `{data_dir}/tls` is copied: the certificates with their keys, and the ACME account. */
const MEMBERS = ['certs', 'acme']

/**
 * `{data_dir}/tls` as an uncompressed tar (GNU tar on the host), for its copy off the box: the
 * folders `certs/` and `acme/` (whichever exist), members sorted by name with numeric owners, so
 * the same files give the same bytes and the copier can tell a change by the digest.
 */
export class TlsFolder {
  constructor(private dir: string) {}

  /** The members there are to copy; none when Berth never had a certificate. */
  async members(): Promise<string[]> {
    const names = await readdir(this.dir).catch(() => [] as string[])
    return MEMBERS.filter((m) => names.includes(m))
  }

  /**
   * The tar as a stream; it errors when tar fails (a file vanishing mid-read is one), so a broken
   * tar is never taken for a copy. Null when there is nothing to copy.
   */
  async tar(): Promise<ReadableStream<Uint8Array> | null> {
    const members = await this.members()
    if (members.length === 0) return null
    const dir = this.dir
    const proc = Bun.spawn(['tar', '--create', '--file', '-', '--sort=name', '--numeric-owner', '--directory', this.dir, ...members], { stdout: 'pipe', stderr: 'pipe' })
    const stderr = new Response(proc.stderr).text()
    const checkExit = new TransformStream<Uint8Array, Uint8Array>({
      async flush(controller) {
        const code = await proc.exited
        if (code !== 0) controller.error(new Error(`tar of ${dir} failed (${code}): ${(await stderr).trim()}`))
      },
    })
    return proc.stdout.pipeThrough(checkExit)
  }
}
