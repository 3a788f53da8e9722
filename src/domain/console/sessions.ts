import type { ContainerRuntime, Terminal } from '../../drivers/runtime/types'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { AuditRecord, AuditTrail } from '../audit'
import { asDomainError, conflict, OverBudgetError, say, unauthorized } from '../errors'
import type { ConsoleGrant } from './tickets'

export interface ConsoleLimits {
  perSite: number
  inputBytes: number
  idleMs: number
  maxMs: number
  checkMs: number
}

/** The limits of console sessions (issue 26). */
export const CONSOLE_LIMITS: Readonly<ConsoleLimits> = {
  /** Open sessions per site; one more is refused (429), at the ticket and at the upgrade. */
  perSite: 3,
  /**
   * Input waiting for the shell, at most (issue 36): keys the container's stream has not taken
   * yet, and those sent before the session started. Past it the session ends (input_overflow):
   * a WebSocket cannot be told to stop sending, so what a flood sends must not pile up in Berth.
   */
  inputBytes: 4 * 1024 * 1024,
  /** A session with no input (keys typed, resizes aside) for this long is ended. */
  idleMs: 15 * 60_000,
  /** No session lasts longer than this. */
  maxMs: 8 * 60 * 60_000,
  /** How often the open sessions are checked: idle, age, and the key and site when the store moved. */
  checkMs: 1000,
}

/** Why a session ended when not by its process's own exit: a stable code and a sentence. */
export interface SessionEnd {
  /** The process's exit code when it ended by itself; null otherwise. */
  exitCode: number | null
  /** Null when the process exited; else what ended it. */
  reason: { code: EndCode; message: string } | null
}

export type EndCode = 'idle_timeout' | 'session_too_long' | 'key_revoked' | 'site_unavailable' | 'closed' | 'terminal_lost' | 'shutting_down' | 'input_overflow'

/** The sentence of a session ended for the input it let pile up (`inputBytes`). */
export const inputOverflow = (limitBytes: number) => ({
  message: `The session ended: more than ${limitBytes / 1024 / 1024} MiB of input was waiting for the shell, which reads it more slowly than it came. Open a new console; send large data as a file (the files API's upload), not as keys.`,
  audit: `input over ${limitBytes / 1024 / 1024} MiB`,
})

/** Each way a session can be ended from outside: its sentence for the peer, its words for the audit trail. */
const ENDS: Record<Exclude<EndCode, 'site_unavailable' | 'input_overflow'>, { message: string; audit: string }> = {
  idle_timeout: { message: 'The session ended after 15 minutes without input; open a new console.', audit: 'idle 15 min' },
  session_too_long: { message: 'The session ended after 8 hours, the longest a console lasts; open a new console.', audit: '8 h limit' },
  key_revoked: { message: 'The session ended because the API key that opened it was revoked.', audit: 'key revoked' },
  closed: { message: 'The session was closed by its client.', audit: 'closed by client' },
  terminal_lost: { message: 'The connection to the site\'s container was lost (the site stopped or restarted); open a new console.', audit: 'container lost' },
  shutting_down: { message: 'Berth is restarting; open a new console in a minute.', audit: 'Berth stopped' },
}

/** The other end of a session: the WebSocket (src/console/socket.ts), or a test. */
export interface SessionPeer {
  /** Terminal output; false when the peer's buffer is full (output pauses until `drained`). */
  output(bytes: Uint8Array): boolean
  /** Called once, when the session ended, with how. */
  ended(end: SessionEnd): void
}

/** An open session, as its peer drives it. */
export interface ConsoleSession {
  input(bytes: Uint8Array): void
  resize(cols: number, rows: number): void
  /** The peer can take output again. */
  drained(): void
  /** The peer went away: the session ends (its processes killed). */
  hangUp(): void
}

export interface ConsoleSessionsDeps {
  clock: Clock
  log: Logger
  runtime: Pick<ContainerRuntime, 'openTerminal'>
  /** The shell's argv as it starts in the site: an app site's through berth-env (issue 39); absent: as it is. */
  argv?: (siteId: string, argv: string[]) => string[]
  audit: AuditTrail
  /** True while the key may still act (not revoked, rotated, or its account gone). */
  keyActive(grant: ConsoleGrant): boolean
  /** The site's row now, or undefined when gone. */
  site(siteId: string): SiteRow | undefined
  /** Moves when keys, accounts or sites change (`Store.versionOf(['accounts', 'sites'])`). */
  version(): number
  /** The site user's home inside a container: where the shell starts. */
  home: string
  limits?: ConsoleLimits
}

/** What a site's state means for an open console: absent while it may go on, else how it ends. */
const SITE_ENDS: Partial<Record<SiteRow['status'], { message: string; audit: string }>> = {
  suspended: { message: 'The session ended because the site was suspended.', audit: 'site suspended' },
  pending_deletion: { message: 'The session ended because the site was deleted.', audit: 'site deleted' },
  deleted: { message: 'The session ended because the site was deleted.', audit: 'site deleted' },
  failed: { message: 'The session ended because the site failed.', audit: 'site failed' },
}

/**
 * The shell a console runs: bash as a login shell where the image has it (berth/php), else the
 * POSIX shell (berth/static's busybox).
 */
export const CONSOLE_SHELL = ['/bin/sh', '-c', 'if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi']

interface Open {
  grant: ConsoleGrant
  /** The audit trail's words for why it ended (when not by its exit). */
  auditReason?: string
  terminal: Terminal
  peer: SessionPeer
  audit: AuditRecord
  startedAt: number
  lastInput: number
  /** The store's version when its key and site were last found in good standing. */
  checkedVersion: number
  done: boolean
}

/**
 * The open console sessions: each a shell with a terminal in its site's container, as the site
 * user, between the terminal and a peer. A session ends when its shell exits, its peer hangs up,
 * after CONSOLE_LIMITS.idleMs without input or maxMs in all, and within `checkMs` of its key being
 * revoked or its site suspended or deleted: one timer checks every open session, and reads the
 * key and the site only when the store's accounts or sites moved. Each session is in the audit
 * trail: its start with the key, its end with the exit code or the reason.
 */
export class ConsoleSessions {
  private open = new Set<Open>()
  /** Sessions being started (their terminal not there yet), by site: they count against the limit. */
  private starting = new Map<string, number>()
  private timer: ReturnType<typeof setInterval> | null = null
  private limits: ConsoleLimits

  constructor(private d: ConsoleSessionsDeps) {
    this.limits = d.limits ?? CONSOLE_LIMITS
  }

  /** The most input a session lets wait for its shell (CONSOLE_LIMITS.inputBytes). */
  get inputLimitBytes(): number {
    return this.limits.inputBytes
  }

  /** Open sessions of a site (starting ones included). */
  countFor(siteId: string): number {
    let n = this.starting.get(siteId) ?? 0
    for (const s of this.open) if (s.grant.siteId === siteId) n++
    return n
  }

  /** Throws 429 (over_budget) when the site already has its most sessions open. */
  requireRoom(siteId: string, slug: string): void {
    if (this.countFor(siteId) >= this.limits.perSite) {
      throw new OverBudgetError(say`Site '${slug}' already has ${this.limits.perSite} console sessions open, the most it may; close one (type exit) and retry.`, 30)
    }
  }

  /**
   * Starts the shell of `grant` with a `cols` x `rows` terminal and joins it to `peer`. Throws a
   * DomainError (429 with no room; 409 when the container does not run; 503 engine down).
   */
  async start(grant: ConsoleGrant, size: { cols: number; rows: number }, peer: SessionPeer): Promise<ConsoleSession> {
    this.requireRoom(grant.siteId, grant.slug)
    // The key or the site may have changed since the ticket was issued. The version is read
    // first: a revocation landing while the terminal starts moves it, and the next check sees it.
    const checkedVersion = this.d.version()
    const refused = this.standing(grant)
    if (refused) throw refused.code === 'key_revoked' ? unauthorized(refused.message) : conflict(refused.message)
    this.starting.set(grant.siteId, (this.starting.get(grant.siteId) ?? 0) + 1)
    let terminal: Terminal
    try {
      terminal = await this.d.runtime.openTerminal(grant.slug, { argv: this.d.argv?.(grant.siteId, CONSOLE_SHELL) ?? CONSOLE_SHELL, user: 'site', cwd: this.d.home, cols: size.cols, rows: size.rows })
    } catch (err) {
      throw asDomainError(err) ?? err
    } finally {
      const n = (this.starting.get(grant.siteId) ?? 1) - 1
      if (n > 0) this.starting.set(grant.siteId, n)
      else this.starting.delete(grant.siteId)
    }
    const now = this.d.clock.now()
    const audit = this.d.audit.begin({ siteId: grant.siteId, kind: 'console', actor: { kind: 'key', keyId: grant.keyId, keyPrefix: grant.keyPrefix }, command: null })
    const s: Open = { grant, terminal, peer, audit, startedAt: now, lastInput: now, checkedVersion, done: false }
    this.open.add(s)
    this.watch()
    terminal.onData((bytes) => {
      if (!s.done && !peer.output(bytes)) terminal.pause()
    })
    void terminal.exited.then((code) => (code === null ? this.end(s, 'terminal_lost') : this.finish(s, { exitCode: code, reason: null })))
    const ordered = new ResizesFirst(terminal)
    return {
      input: (bytes) => {
        if (s.done) return
        s.lastInput = this.d.clock.now()
        // What the container has not taken yet, and this: past the bound the session ends rather
        // than keep it all in memory (the peer cannot be paused).
        if (terminal.pendingInput + ordered.heldBytes + bytes.byteLength > this.limits.inputBytes) return void this.end(s, 'input_overflow', inputOverflow(this.limits.inputBytes))
        ordered.write(bytes)
      },
      resize: (cols, rows) => {
        if (!s.done) ordered.resize(cols, rows)
      },
      drained: () => terminal.resume(),
      hangUp: () => this.end(s, 'closed'),
    }
  }

  /** Ends every open session (Berth stopping), their processes killed. */
  async closeAll(): Promise<void> {
    await Promise.all([...this.open].map((s) => this.end(s, 'shutting_down')))
  }

  /** One pass of the checks (the timer's; tests call it with their clock). */
  check(): void {
    const now = this.d.clock.now()
    const version = this.d.version()
    for (const s of this.open) {
      if (now - s.lastInput >= this.limits.idleMs) void this.end(s, 'idle_timeout')
      else if (now - s.startedAt >= this.limits.maxMs) void this.end(s, 'session_too_long')
      else if (version !== s.checkedVersion) {
        s.checkedVersion = version
        this.checkStanding(s)
      }
    }
  }

  /** Ends `s` when its key was revoked or its site can no longer be used. */
  private checkStanding(s: Open): void {
    const refused = this.standing(s.grant)
    if (refused) void this.end(s, refused.code, refused)
  }

  /** Null while the grant's key and site may go on; else why not. */
  private standing(grant: ConsoleGrant): { code: EndCode; message: string; audit: string } | null {
    if (!this.d.keyActive(grant)) return { code: 'key_revoked', ...ENDS.key_revoked }
    const site = this.d.site(grant.siteId)
    const why = SITE_ENDS[site?.status ?? 'deleted']
    return why ? { code: 'site_unavailable', ...why } : null
  }

  /** Ends `s` from outside: its terminal closed (processes killed), then `finish`. */
  private async end(s: Open, code: EndCode, why: { message: string; audit: string } = ENDS[code as keyof typeof ENDS]): Promise<void> {
    if (s.done) return
    s.auditReason = why.audit
    this.finish(s, { exitCode: null, reason: { code, message: why.message } })
    await s.terminal.close().catch((err) => this.d.log.warn('a console session\'s processes could not be ended', { site: s.grant.slug, error: (err as Error).message }))
  }

  /** Records the end once: the audit record, the peer told, the session forgotten. */
  private finish(s: Open, end: SessionEnd): void {
    if (s.done) return
    s.done = true
    this.open.delete(s)
    if (this.open.size === 0 && this.timer) {
      clearInterval(this.timer)
      this.timer = null
    }
    s.audit.end({ exitCode: end.exitCode, ...(s.auditReason ? { reason: s.auditReason } : {}) })
    s.peer.ended(end)
  }

  /** Starts the checks' timer while any session is open. */
  private watch(): void {
    if (this.timer) return
    this.timer = setInterval(() => this.check(), this.limits.checkMs)
    ;(this.timer as { unref?: () => void }).unref?.()
  }
}

/** How long keys typed after a resize wait for the engine to apply it, at most. */
const RESIZE_WAIT_MS = 1000

/**
 * Keeps a terminal's resizes and keys in the order the peer sent them: a resize is a call to the
 * engine while keys go straight down the stream, so keys typed right after a resize (`stty size`)
 * would otherwise reach the shell before the new size did. Keys that come while a resize is under
 * way wait for it (at most RESIZE_WAIT_MS), then go in the order they came.
 */
class ResizesFirst {
  private resizing: Promise<void> | null = null
  /** The size asked for last while a resize was under way: only the newest is applied next. */
  private wanted: { cols: number; rows: number } | null = null
  private held: Uint8Array[] = []
  /** The bytes of `held`. */
  heldBytes = 0

  constructor(private terminal: Pick<Terminal, 'write' | 'resize'>) {}

  write(bytes: Uint8Array): void {
    if (this.resizing) {
      this.held.push(bytes)
      this.heldBytes += bytes.byteLength
    } else this.terminal.write(bytes)
  }

  /**
   * Resizes that come while one is under way collapse into the newest (issue 36: a flood of
   * resizes queued one engine call each, without bound); the keys wait for the last.
   */
  resize(cols: number, rows: number): void {
    this.wanted = { cols, rows }
    this.resizing ??= this.applyAll()
  }

  private async applyAll(): Promise<void> {
    for (let next = this.wanted; next; next = this.wanted) {
      this.wanted = null
      const { cols, rows } = next
      await new Promise<void>((done) => {
        const timer = setTimeout(done, RESIZE_WAIT_MS)
        void this.terminal.resize(cols, rows).catch(() => {}).finally(() => {
          clearTimeout(timer)
          done()
        })
      })
    }
    this.resizing = null
    this.heldBytes = 0
    for (const bytes of this.held.splice(0)) this.terminal.write(bytes)
  }
}
