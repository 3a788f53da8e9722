import { SecretUnreadableError } from '../../drivers/secrets/errors'
import type { SecretBox } from '../../drivers/secrets/types'
import { iso, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { invalid, op, say } from '../errors'
import type { SiteEnvRepository, SiteEnvRow } from './repository'
import { checkName, checkTotals, checkValue, ENV_LIMITS } from './rules'
import type { SiteEnvVariableView, SiteEnvView } from './views'

/** The body of PATCH and PUT `/sites/{tenant_slug}/env/`. */
export interface SiteEnvChange {
  /** NAME -> value; null removes the variable (PATCH) or leaves it out (PUT). */
  variables?: Record<string, string | null>
  /** Names to keep secret: those set in `variables`, or existing variables to mark secret. */
  secret?: string[]
}

/** A secret's last characters are shown only for values at least this long (a token, a key). */
const LAST4_FROM_CHARS = 20
/** Bytes of a sealed value besides the ciphertext (drivers/secrets/box-key.ts: header, nonce, tag). */
const SEALED_OVERHEAD = 2 + 12 + 16

/** One variable as the service works with it: its value opened, or null for a secret this box cannot open. */
interface Entry {
  name: string
  secret: boolean
  value: string | null
  /** The row as stored, when the value did not change (a secret kept sealed as it was). */
  row?: SiteEnvRow
}

/**
 * A site's settings and secrets (issue 39, item 5): variables for its app, its build, its deploy
 * hook and exec. A secret's value is sealed with the box key (drivers/secrets) before it reaches
 * the store and never leaves the API again: the view shows its length and, for a long one, its
 * last 4 characters. A change calls the `onChanged` listeners (the composition restarts the app
 * with the new values) once it is stored.
 */
export class SiteEnvService {
  private listeners: ((site: SiteRow) => Promise<void>)[] = []
  /** What other areas give the site (its databases' URLs, domain/databases): merged under its own variables, all secret. */
  private providers: { values: (siteId: string) => Record<string, string>; secrets: (siteId: string) => string[] }[] = []
  /** The names of the site's variables its PHP cannot be given, with why (compose/apps.ts: php-fpm's pool file). */
  private leftOut: (site: SiteRow, values: Record<string, string>) => { name: string; why: string }[] = () => []

  constructor(private d: { store: Pick<Store, 'write'>; repo: SiteEnvRepository; box: SecretBox; clock: Clock; log: Logger }) {}

  /** Hears of each change of a site's set, after it is stored; a listener's failure is logged, the change stays. */
  onChanged(listener: (site: SiteRow) => Promise<void>): void {
    this.listeners.push(listener)
  }

  /**
   * Adds variables the platform gives the site (a database's {NAME}_URL and DATABASE_URL): merged
   * under the site's own (a variable the site sets with the same name wins), secret (masked in
   * outputs and logs), never shown by `view`. `secrets` adds values to mask besides them (the
   * passwords inside the URLs, should a program print one alone).
   */
  provide(values: (siteId: string) => Record<string, string>, secrets: (siteId: string) => string[] = () => []): void {
    this.providers.push({ values, secrets })
  }

  /** The variables a provider gives `site` changed: the listeners hear of it as of any change. */
  async providedChanged(site: SiteRow): Promise<void> {
    await this.tell(site)
  }

  /**
   * Says which of a site's variables a part of it cannot be given (PHP-FPM's pool holds no line
   * break, no empty value, none starting with `$`): the view's warning names them, so an agent
   * learns it from the API, not from PHP's missing variable.
   */
  explainLeftOut(fn: (site: SiteRow, values: Record<string, string>) => { name: string; why: string }[]): void {
    this.leftOut = fn
  }

  /** The names the site sets itself. */
  ownNames(siteId: string): ReadonlySet<string> {
    return new Set(this.d.repo.list(siteId).map((r) => r.name))
  }

  view(site: SiteRow): SiteEnvView {
    const rows = this.d.repo.list(site.id)
    const variables = rows.map((row) => this.viewOf(row))
    const unreadable = variables.filter((v) => !v.readable).map((v) => v.name)
    const own: Record<string, string> = {}
    for (const row of rows) {
      const value = this.opened(row)
      if (value !== null) own[row.name] = value
    }
    const left = this.leftOut(site, own)
    const warnings = [
      unreadable.length === 0 ? null : `This box cannot open the secrets ${unreadable.join(', ')}: they were sealed with a key it does not have (the store was restored without its secrets.key). The app gets none of them: set each again with its value, or have the hoster put the old box's secrets.key back in the data folder.`,
      left.length === 0 ? null : `PHP does not get ${left.map((l) => `${l.name} (${l.why})`).join(', ')}: PHP-FPM's configuration cannot hold a value with a line break, an empty one or one starting with $. The app's processes, its build, deploy hook and exec get them; for PHP, store such a value encoded (base64) and decode it in PHP.`,
    ].filter((w): w is string => w !== null)
    return {
      variables,
      count: rows.length,
      bytes: rows.reduce((n, r) => n + bytesOf(r), 0),
      limits: { variables: ENV_LIMITS.variables, bytes: ENV_LIMITS.totalBytes, value_bytes: ENV_LIMITS.valueBytes },
      warning: warnings.length === 0 ? null : warnings.join(' '),
    }
  }

  /** Adds, replaces (`variables`) and removes (null) the named variables; marks the `secret` ones secret. */
  patch(site: SiteRow, body: SiteEnvChange): Promise<SiteEnvView> {
    return this.change(site, body, 'patch')
  }

  /** Replaces the whole set with `variables`; `{}` removes every variable. */
  replace(site: SiteRow, body: SiteEnvChange): Promise<SiteEnvView> {
    return this.change(site, body, 'replace')
  }

  /**
   * NAME -> value of every variable the site has, secrets opened, over what the providers give
   * it: what its app, build, hook and exec get. A secret this box cannot open is left out.
   */
  valuesOf(siteId: string): Record<string, string> {
    const values: Record<string, string> = this.provided(siteId)
    for (const row of this.d.repo.list(siteId)) {
      const value = this.opened(row)
      if (value !== null) values[row.name] = value
    }
    return values
  }

  /** The opened values of the site's secrets, for redact (./redact.ts). */
  secretValuesOf(siteId: string): string[] {
    const own = this.d.repo.list(siteId)
    const ownNames = new Set(own.map((r) => r.name))
    const provided = Object.entries(this.provided(siteId)).filter(([name]) => !ownNames.has(name)).map(([, v]) => v)
    const extra = this.providers.flatMap((p) => p.secrets(siteId))
    return [...own.filter((r) => r.secret).map((r) => this.opened(r)), ...provided, ...extra].filter((v): v is string => v !== null && v !== '')
  }

  private provided(siteId: string): Record<string, string> {
    const values: Record<string, string> = {}
    for (const provider of this.providers) Object.assign(values, provider.values(siteId))
    return values
  }

  /** A reaped site's variables go with it (SiteDataPurger of domain/sites). */
  async removeAllFor(siteId: string): Promise<void> {
    this.d.repo.removeAll(siteId)
  }

  private async change(site: SiteRow, body: SiteEnvChange, mode: 'patch' | 'replace'): Promise<SiteEnvView> {
    const variables = body.variables ?? {}
    const secret = new Set(body.secret ?? [])
    for (const [name, value] of Object.entries(variables)) {
      checkName(name, `variables.${name}`)
      if (value !== null) checkValue(value, `variables.${name}`)
      else if (secret.has(name)) throw invalid('secret', `${name} is removed (null) and marked secret in the same call; drop it from one of them.`)
    }
    for (const name of secret) checkName(name, 'secret')
    const changed = this.d.store.write(() => {
      const now = this.d.clock.now()
      const current = new Map(this.d.repo.list(site.id).map((r) => [r.name, r]))
      const next = new Map<string, Entry>(mode === 'patch' ? [...current].map(([name, row]) => [name, { name, secret: row.secret, value: null, row }]) : [])
      for (const name of secret) {
        if (name in variables) continue
        const row = current.get(name)
        if (!row) throw invalid('secret', say`'${site.slug}' has no variable ${name} to mark secret; give its value too: {"variables": {"${name}": "..."}, "secret": ["${name}"]} (${op('getSiteEnv', { tenant_slug: site.slug })} lists them).`)
        // A plain value becomes a secret: sealed now. A secret stays as it is sealed.
        next.set(name, row.secret ? { name, secret: true, value: null, row } : { name, secret: true, value: row.value ?? '' })
      }
      for (const [name, value] of Object.entries(variables)) {
        if (value === null) {
          next.delete(name)
          continue
        }
        // No call makes a secret plain again: its value replaced stays secret (docs/api.md).
        next.set(name, { name, secret: secret.has(name) || current.get(name)?.secret === true, value })
      }
      const bytes = [...next.values()].reduce((n, e) => n + (e.row && e.value === null ? bytesOf(e.row) : Buffer.byteLength(e.name) + Buffer.byteLength(e.value ?? '')), 0)
      checkTotals(next.size, bytes, site.slug)
      let changes = 0
      for (const name of current.keys()) {
        if (!next.has(name)) {
          this.d.repo.remove(site.id, name)
          changes++
        }
      }
      for (const entry of next.values()) {
        if (entry.row && entry.value === null && entry.row.secret === entry.secret) continue
        const before = current.get(entry.name)
        if (before && before.secret === entry.secret && this.opened(before) === entry.value) continue
        this.d.repo.put(this.rowOf(site.id, entry, now))
        changes++
      }
      return changes > 0
    })
    if (changed) await this.tell(site)
    return this.view(site)
  }

  private async tell(site: SiteRow): Promise<void> {
    for (const listener of this.listeners) {
      try {
        await listener(site)
      } catch (err) {
        this.d.log.error('a change of a site\'s variables was stored, but its listener failed', { site: site.slug, error: (err as Error).message })
      }
    }
  }

  private rowOf(siteId: string, e: Entry, now: number): SiteEnvRow {
    const value = e.value ?? ''
    if (!e.secret) return { siteId, name: e.name, value, sealed: null, secret: false, updatedAt: now }
    return { siteId, name: e.name, value: null, sealed: this.d.box.seal(value, { siteId, name: e.name }), secret: true, updatedAt: now }
  }

  /** The row's value, a secret opened; null for a secret this box cannot open. */
  private opened(row: SiteEnvRow): string | null {
    if (!row.secret) return row.value ?? ''
    try {
      return this.d.box.open(row.sealed ?? '', { siteId: row.siteId, name: row.name })
    } catch (err) {
      if (err instanceof SecretUnreadableError) return null
      throw err
    }
  }

  private viewOf(row: SiteEnvRow): SiteEnvVariableView {
    const base = { name: row.name, secret: row.secret, updated_at: iso(row.updatedAt) }
    if (!row.secret) return { ...base, value: row.value ?? '', readable: true, length: [...(row.value ?? '')].length, last4: null }
    const value = this.opened(row)
    if (value === null) return { ...base, value: null, readable: false, length: null, last4: null }
    const chars = [...value]
    return { ...base, value: null, readable: true, length: chars.length, last4: chars.length >= LAST4_FROM_CHARS ? chars.slice(-4).join('') : null }
  }
}

/** Bytes a stored variable counts: its name and value; a sealed one by its ciphertext, which is as long as the value. */
function bytesOf(row: SiteEnvRow): number {
  const valueBytes = row.secret ? Math.max(0, Buffer.from(row.sealed ?? '', 'base64').length - SEALED_OVERHEAD) : Buffer.byteLength(row.value ?? '')
  return Buffer.byteLength(row.name) + valueBytes
}
