import type { TSchema } from '@sinclair/typebox'
import { compileAnswerCheck } from './answer-check'

/**
 * Answers kept as JSON, per key (an account), until `version` moves: for lists that agents read
 * again and again and that change far less often. Each answer is checked against the route's
 * schema once, when it is made, since a cached body (like GET /plans/'s) skips Elysia's
 * per-response check.
 *
 * Building, checking and serializing GET /sites/ for 100 sites cost 15 times whoami even once
 * each list was read in a constant five queries (bench:lists, issue 22); served from here it
 * costs about what whoami does. The first read after any change pays the full price.
 * At most `maxBytes` of JSON are kept; the least recently made answers go first.
 */
export class JsonCache<T> {
  private entries = new Map<string, { version: number; json: string }>()
  private bytes = 0
  private check

  constructor(private o: { name: string; schema: TSchema; version: () => number; maxBytes: number }) {
    this.check = compileAnswerCheck(o.schema)
  }

  /** The JSON of `make()` for `key`, made again only when the version moved since it was kept. */
  get(key: string, make: () => T): string {
    const version = this.o.version()
    const kept = this.entries.get(key)
    if (kept?.version === version) return kept.json
    const data = make()
    if (!this.check.Check(data)) throw new Error(`${this.o.name} would answer data that does not match its schema: ${[...this.check.Errors(data)].slice(0, 3).map((e) => `${e.path} ${e.message}`).join('; ')}`)
    const json = JSON.stringify(data)
    this.forget(key)
    this.entries.set(key, { version, json })
    this.bytes += json.length
    for (const [oldest] of this.entries) {
      if (this.bytes <= this.o.maxBytes) break
      this.forget(oldest)
    }
    return json
  }

  private forget(key: string): void {
    const kept = this.entries.get(key)
    if (!kept) return
    this.bytes -= kept.json.length
    this.entries.delete(key)
  }
}
