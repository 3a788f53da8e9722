import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { Agent } from 'node:https'
import { X509Certificate } from 'node:crypto'
import { join } from 'node:path'
import * as x509 from '@peculiar/x509'
import * as acme from 'acme-client'
import type { Logger } from '../../lib/logger'
import { writePrivateFile } from '../../lib/private-file'
import { IssueError, type CertificateIssuer, type ChallengeSolver, type ChallengeType, type IssuedCertificate } from './types'

export interface AcmeOptions {
  directoryUrl: string
  /** The hoster's address: the CA writes about expiries and problems there. */
  email: string
  /** The CA's terms of service, accepted by the hoster in config (tls.acme_terms_agreed). */
  termsAgreed: boolean
  /** External account binding, for CAs that need one (ZeroSSL, Google): key id and HMAC key (base64url). */
  eab: { kid: string; hmacKey: string } | null
  /** Extra CA certificates (PEM) to trust for the directory's own HTTPS: Pebble's, in tests. */
  caBundle: string | null
  /** Where the account key and URL are kept (mode 0600). */
  dir: string
  log: Logger
}

/**
 * The ACME issuer on acme-client: one account per Berth (its key in the data folder), an ECDSA
 * P-256 key per certificate, HTTP-01 or DNS-01 through the solver Berth gives it. acme-client's
 * own challenge self-check is off: it would look the names up in this machine's resolver and
 * fetch them on port 80, neither of which tells what the CA will see; Berth's pre-flight check
 * (the domain layer) does that job before an order is placed.
 */
export class AcmeIssuer implements CertificateIssuer {
  readonly name = 'acme'
  private client: Promise<acme.Client> | null = null

  constructor(private o: AcmeOptions) {
    if (o.caBundle) acme.axios.defaults.httpsAgent = new Agent({ ca: o.caBundle, keepAlive: true })
  }

  async issue(input: { names: string[]; challenge: ChallengeType; solver: ChallengeSolver }): Promise<IssuedCertificate> {
    const client = await this.account()
    const keyPem = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString()
    const [, csr] = await acme.crypto.createCsr({ commonName: input.names[0], altNames: input.names }, keyPem)
    const s = input.solver
    let certPem: string
    try {
      certPem = await client.auto({
        csr,
        email: this.o.email,
        termsOfServiceAgreed: this.o.termsAgreed,
        challengePriority: [input.challenge],
        skipChallengeVerification: true,
        challengeCreateFn: async (authz, challenge, keyAuthorization) => {
          if (challenge.type === 'http-01') s.addHttp(challenge.token, keyAuthorization)
          else s.addTxt(authz.identifier.value, keyAuthorization)
        },
        challengeRemoveFn: async (authz, challenge, keyAuthorization) => {
          if (challenge.type === 'http-01') s.removeHttp(challenge.token)
          else s.removeTxt(authz.identifier.value, keyAuthorization)
        },
      })
    } catch (err) {
      throw classify(err)
    }
    const leaf = new X509Certificate(certPem)
    return { certPem, keyPem, notBefore: Date.parse(leaf.validFrom), notAfter: Date.parse(leaf.validTo), serial: leaf.serialNumber.toUpperCase() }
  }

  async renewalWindow(certPem: string): Promise<{ start: number; end: number } | null> {
    try {
      const directory = (await acme.axios.get(this.o.directoryUrl)).data as { renewalInfo?: string }
      if (!directory.renewalInfo) return null
      const res = await acme.axios.get(`${directory.renewalInfo.replace(/\/$/, '')}/${certId(certPem)}`, { validateStatus: () => true })
      const window = (res.data as { suggestedWindow?: { start: string; end: string } })?.suggestedWindow
      if (res.status !== 200 || !window) return null
      const [start, end] = [Date.parse(window.start), Date.parse(window.end)]
      return Number.isFinite(start) && Number.isFinite(end) ? { start, end } : null
    } catch {
      return null
    }
  }

  /** The ACME client with its account: the key made once and kept, the account URL remembered. */
  private account(): Promise<acme.Client> {
    this.client ??= (async () => {
      mkdirSync(this.o.dir, { recursive: true, mode: 0o700 })
      const keyFile = join(this.o.dir, 'account.key')
      if (!existsSync(keyFile)) writePrivateFile(keyFile, (await acme.crypto.createPrivateEcdsaKey('P-256')).toString())
      const stateFile = join(this.o.dir, 'account.json')
      const state = existsSync(stateFile) ? (JSON.parse(readFileSync(stateFile, 'utf8')) as { directoryUrl: string; accountUrl: string }) : null
      const client = new acme.Client({
        directoryUrl: this.o.directoryUrl,
        accountKey: readFileSync(keyFile),
        accountUrl: state?.directoryUrl === this.o.directoryUrl ? state.accountUrl : undefined,
        externalAccountBinding: this.o.eab ?? undefined,
      })
      try {
        await client.createAccount({ termsOfServiceAgreed: this.o.termsAgreed, contact: [`mailto:${this.o.email}`] })
      } catch (err) {
        this.client = null
        throw classify(err)
      }
      writePrivateFile(stateFile, JSON.stringify({ directoryUrl: this.o.directoryUrl, accountUrl: client.getAccountUrl() }))
      this.o.log.info('ACME account ready', { directory: this.o.directoryUrl, account: client.getAccountUrl() })
      return client
    })()
    return this.client
  }
}

/** The ARI certificate identifier: base64url(authority key id) "." base64url(serial), RFC 9773 4.1. */
export function certId(certPem: string): string {
  const cert = new x509.X509Certificate(certPem)
  const aki = cert.getExtension(x509.AuthorityKeyIdentifierExtension)
  if (!aki?.keyId) throw new Error('the certificate has no authority key identifier')
  let serial = cert.serialNumber
  if (serial.length % 2) serial = `0${serial}`
  if (parseInt(serial.slice(0, 2), 16) & 0x80) serial = `00${serial}`
  return `${Buffer.from(aki.keyId, 'hex').toString('base64url')}.${Buffer.from(serial, 'hex').toString('base64url')}`
}

/** An ACME failure as the domain layer needs it: rate limited (and until when), refused, or unreachable. */
function classify(err: unknown): IssueError {
  const message = (err as Error)?.message ?? String(err)
  if (/rateLimited|too many/i.test(message)) {
    const after = /retry after ([0-9T:.\-+ Z]+)/i.exec(message)?.[1]
    const at = after ? Date.parse(after) : NaN
    return new IssueError('rate_limited', message, Number.isFinite(at) ? at : null)
  }
  if (/ECONNREFUSED|ENOTFOUND|ETIMEDOUT|ECONNRESET|socket hang up|directory returned|certificate/i.test(message) && !/urn:ietf:params:acme/.test(message)) {
    return new IssueError('unreachable', message)
  }
  return new IssueError('refused', message)
}

