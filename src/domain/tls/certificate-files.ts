/**
 * Where issued certificates and their keys are kept, by certificate id (drivers/certs/files.ts:
 * `{data_dir}/tls/certs/{id}.crt` and `.key`, 0600). The manager decides what is kept and served;
 * the store only holds the PEM text.
 */
export interface CertificateFiles {
  /** True when the certificate of `id` is kept (its key is written first, so it is there too). */
  has(id: string): boolean
  /** The certificate and key of `id`, as PEM; throws when either cannot be read. */
  read(id: string): { cert: string; key: string }
  /** Keeps the key, then the certificate, each replaced whole or not at all, readable by Berth only. */
  write(id: string, pem: { cert: string; key: string }): void
  /** Removes both; true when a certificate was there. A missing one is no error. */
  remove(id: string): boolean
  /** Where the certificate of `id` is, for a message to the hoster. */
  where(id: string): string
}
