import type { ChallengeSolver } from '../../drivers/certs/types'

/**
 * What the CA checks while an order is open: HTTP-01 tokens the edge answers at
 * `/.well-known/acme-challenge/{token}` on any host, and DNS-01 TXT values the zone book serves at
 * `_acme-challenge.{name}`. In memory only: an order does not outlive the process.
 */
export class ChallengeBook implements ChallengeSolver {
  private tokens = new Map<string, string>()
  private txt = new Map<string, string[]>()
  private changes = 0

  addHttp(token: string, keyAuthorization: string): void {
    this.tokens.set(token, keyAuthorization)
  }

  removeHttp(token: string): void {
    this.tokens.delete(token)
  }

  /** The key authorization for an HTTP-01 token, or undefined. */
  httpAnswer(token: string): string | undefined {
    return this.tokens.get(token)
  }

  addTxt(name: string, value: string): void {
    this.txt.set(name, [...(this.txt.get(name) ?? []), value])
    this.changes++
  }

  removeTxt(name: string, value: string): void {
    const left = (this.txt.get(name) ?? []).filter((v) => v !== value)
    if (left.length > 0) this.txt.set(name, left)
    else this.txt.delete(name)
    this.changes++
  }

  /** The TXT records to serve: owner name and values. */
  txtRecords(): { name: string; values: string[] }[] {
    return [...this.txt].map(([name, values]) => ({ name: `_acme-challenge.${name}`, values }))
  }

  /** Moves whenever the TXT records change (the zone book rebuilds on it). */
  generation(): number {
    return this.changes
  }
}

/** The ACME HTTP-01 path prefix; requests under it are never redirected to HTTPS. */
export const ACME_CHALLENGE_PATH = '/.well-known/acme-challenge/'
