import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { writePrivateFile } from '../../lib/private-file'

/**
 * Certificates and keys as files in one folder (`{data_dir}/tls/certs`, 0700): `{id}.crt` and
 * `{id}.key`, each 0600 and replaced atomically (lib/private-file.ts). The CertificateFiles of
 * domain/tls/certificate-files.ts.
 */
export class CertificateFolder {
  constructor(readonly dir: string) {}

  has(id: string): boolean {
    return existsSync(this.file(id, 'crt'))
  }

  read(id: string): { cert: string; key: string } {
    return { cert: readFileSync(this.file(id, 'crt'), 'utf8'), key: readFileSync(this.file(id, 'key'), 'utf8') }
  }

  write(id: string, pem: { cert: string; key: string }): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 })
    writePrivateFile(this.file(id, 'key'), pem.key)
    writePrivateFile(this.file(id, 'crt'), pem.cert)
  }

  remove(id: string): boolean {
    const had = this.has(id)
    for (const ext of ['crt', 'key'] as const) rmSync(this.file(id, ext), { force: true })
    return had
  }

  where(id: string): string {
    return this.file(id, 'crt')
  }

  private file(id: string, ext: 'crt' | 'key'): string {
    return join(this.dir, `${id}.${ext}`)
  }
}
