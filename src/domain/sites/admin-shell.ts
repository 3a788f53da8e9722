import type { ContainerRuntime, Terminal } from '../../drivers/runtime/types'
import type { SiteRow } from '../../store/schema'
import { type AuditTrail, commandLineOf } from '../audit'
import { notFound } from '../errors'
import type { SitesRepository } from './repository'

/**
 * The interactive login shell of `berth sites shell` without a command: bash where the image has
 * it (berth/php), else sh (berth/static's busybox), so a hoster's own image works too.
 */
export const LOGIN_SHELL = ['sh', '-c', 'command -v bash >/dev/null 2>&1 && exec bash -l; exec sh -l']

/**
 * The interactive shell of `berth sites shell --user root` without a command (issue 36): no login
 * or rc scripts at all, since the tenant writes its home's (~/.bash_profile, ~/.profile) and root
 * must never run them; HOME is /root (the runtime sets it for every root terminal).
 */
export const ROOT_SHELL = ['sh', '-c', 'command -v bash >/dev/null 2>&1 && exec bash --noprofile --norc -i; exec sh -i']

export interface AdminShellRequest {
  slug: string
  /** The command to run instead of the login shell; null: the login shell. */
  argv: string[] | null
  /** site: uid 1000, as every door of the API; root: uid 0 (still without capabilities). */
  user: 'site' | 'root'
  /** Who asks: the Unix user on the box, for the audit trail. */
  admin: string
  cols: number
  rows: number
}

/** An admin's shell in a site: the terminal, and its end recorded in the audit trail. */
export interface AdminShellSession {
  site: SiteRow
  terminal: Terminal
  /** The command's exit code once it ended (null: closed, or the engine could not say); its audit record is complete by then. */
  readonly exited: Promise<number | null>
  /** Ends the session from outside (the admin's terminal hung up), recording `reason`. */
  close(reason: string): Promise<void>
}

/**
 * `berth sites shell` (issue 26): a terminal in a live site's container for the admin on the
 * box, through the same `openTerminal` as the console, recorded in the site's audit trail as
 * kind `shell` with the admin as actor, from before it starts to its end.
 */
export class AdminShell {
  constructor(private d: {
    sites: Pick<SitesRepository, 'findLiveBySlug'>
    runtime: Pick<ContainerRuntime, 'openTerminal'>
    /** The site user's argv as it starts in the site: an app site's through berth-env (issue 39); absent: as it is. */
    argv?: (site: SiteRow, argv: string[]) => string[]
    audit: AuditTrail
    /** The site's home inside its container, where the shell starts (the runtime's SITE_HOME). */
    home: string
  }) {}

  /** not_found for a slug no live site holds; SiteNotRunnableError when its container is not running. */
  async open(req: AdminShellRequest): Promise<AdminShellSession> {
    const site = this.d.sites.findLiveBySlug(req.slug)
    if (!site) throw notFound(`No site '${req.slug}' on this box (a deleted site's slug names nothing).`, 'slug')
    const record = this.d.audit.begin({
      siteId: site.id, kind: 'shell', actor: { kind: 'admin', user: req.admin }, command: req.argv ? commandLineOf(req.argv) : null, runAs: req.user,
    })
    let terminal: Terminal
    try {
      const shell = req.user === 'root' ? ROOT_SHELL : LOGIN_SHELL
      const argv = req.argv ?? shell
      terminal = await this.d.runtime.openTerminal(site.slug, { argv: req.user === 'site' && this.d.argv ? this.d.argv(site, argv) : argv, user: req.user, cwd: this.d.home, cols: req.cols, rows: req.rows })
    } catch (err) {
      record.end({ exitCode: null, reason: `did not start: ${(err as Error).message}` })
      throw err
    }
    let reason: string | undefined
    const exited = terminal.exited.then((exitCode) => {
      record.end({ exitCode, ...(reason ? { reason } : {}) })
      return exitCode
    })
    return {
      site, terminal, exited,
      async close(why) {
        reason ??= why
        await terminal.close()
        await exited
      },
    }
  }
}
