/**
 * A certificate issuer: ACME today (Let's Encrypt, ZeroSSL, Pebble in tests). The domain layer
 * decides which names need a certificate and when; the issuer only gets one.
 */

export type ChallengeType = 'http-01' | 'dns-01'

/** Where the issuer puts what the CA checks; Berth's edge and DNS server read it. */
export interface ChallengeSolver {
  /** HTTP-01: answer `/.well-known/acme-challenge/{token}` with `keyAuthorization`. */
  addHttp(token: string, keyAuthorization: string): void
  removeHttp(token: string): void
  /**
   * DNS-01: a TXT record `_acme-challenge.{name}` holding `value` (already the digest the CA
   * expects). `name` is the base name for a wildcard; two values may be there at once.
   */
  addTxt(name: string, value: string): void
  removeTxt(name: string, value: string): void
}

export interface IssuedCertificate {
  /** The leaf and its chain, PEM. */
  certPem: string
  /** The certificate's private key, PEM. */
  keyPem: string
  notBefore: number
  notAfter: number
  /** Hex, upper-case, as openssl prints it. */
  serial: string
}

export interface CertificateIssuer {
  /** `acme` */
  readonly name: string
  issue(input: { names: string[]; challenge: ChallengeType; solver: ChallengeSolver }): Promise<IssuedCertificate>
  /**
   * When the CA suggests renewing (ACME Renewal Information, RFC 9773), or null when it does not
   * say (no ARI at this CA, or it did not answer): the caller then renews at two thirds.
   */
  renewalWindow(certPem: string): Promise<{ start: number; end: number } | null>
}

export type IssueErrorKind = 'rate_limited' | 'refused' | 'unreachable'

export class IssueError extends Error {
  constructor(
    readonly kind: IssueErrorKind,
    message: string,
    /** For rate limits: when the CA said to come back (epoch ms), if it said. */
    readonly retryAt: number | null = null,
  ) {
    super(message)
  }
}
