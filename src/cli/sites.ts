import { buildAdminShell } from '../compose/shell'
import { DomainError } from '../domain/errors'
import { SiteNotRunnableError } from '../drivers/runtime/types'
import { createLogger } from '../lib/logger'
import { COMMON_OPTIONS, STORE_OPTIONS, UsageError, type Command, type CommandContext } from './command'
import { configFrom } from './config-flags'
import { attachTerminal, localSize } from './terminal-io'

/**
 * `berth sites ...`: the admin's commands on the sites of this box, reading the store directly
 * (berth serve may run beside). Each subcommand is a Command of path ['sites', name]; `berth
 * sites --help` lists them.
 */

/** The signals that end the session from outside: the admin's terminal closed, or a kill. */
const HANGUPS = { SIGHUP: "the admin's terminal hung up", SIGTERM: 'berth sites shell was terminated', SIGINT: 'berth sites shell was interrupted' } as const

export const sitesShellCommand: Command = {
  path: ['sites', 'shell'],
  summary: "Open a shell (or run a command) in a site's container, as its user or root; recorded in its audit trail.",
  usage: 'berth sites shell SLUG [--user root] [--data-dir DIR] [--config FILE] [-- COMMAND...]',
  description: [
    "Opens a terminal in the running container of the site SLUG, as ssh -t would: an interactive",
    'login shell (bash on berth/php, sh on berth/static), or COMMAND with its arguments when given',
    'after --. It runs as the site user (uid 1000, home /home/site), or as root with --user root',
    "(uid 0 in the container, still without any capability). Your terminal is put in raw mode while",
    'it runs (Ctrl-C and Ctrl-D go to the shell), and its window size is followed. Reads the store',
    'of --data-dir or the config (the one berth serve uses; it may be running) and talks to Docker.',
    '',
    "Every session is recorded in the site's audit trail, which its owner reads with",
    'GET /sites/SLUG/logs/?type=audit: kind shell, admin=$SUDO_USER or $USER, as=root, the',
    'command, its exit code and duration. See docs/operations.md, "A shell in a site".',
    '',
    "Exit status: the command's (the shell's: that of its last command or `exit N`); 1 when the",
    "site's container is not running or the engine cannot say; 2 for a usage error or an unknown",
    'or deleted SLUG.',
  ].join('\n'),
  options: {
    user: { type: 'string', value: 'USER', help: 'site (default: uid 1000, what the API and SSH get) or root (uid 0).' },
    ...STORE_OPTIONS,
    help: COMMON_OPTIONS.help!,
  },
  examples: [
    'berth sites shell shop',
    'berth sites shell shop --user root',
    "berth sites shell shop -- sh -c 'du -sh ~/public'",
    'berth sites shell shop -- php -v',
  ],
  async run(ctx) {
    const [slug, ...argv] = ctx.positionals
    if (!slug) throw new UsageError("give the site's slug: berth sites shell SLUG")
    const user = userOf(ctx.values.user)
    const config = configFrom(ctx)
    // Only errors, on stderr: anything else would land in the middle of the terminal.
    const { shell, close } = buildAdminShell(config, createLogger('error', (line) => process.stderr.write(line + '\n')))
    try {
      let session
      try {
        session = await shell.open({ slug, argv: argv.length > 0 ? argv : null, user, admin: adminOf(ctx), ...localSize(process.stdout) })
      } catch (err) {
        if (err instanceof DomainError && err.kind === 'not_found') {
          ctx.out.error(`${err.message} berth sites shell takes the slug of a site of this box (GET /sites/ lists an account's).`)
          return 2
        }
        if (err instanceof SiteNotRunnableError) {
          ctx.out.error(`site '${slug}': ${err.message} (a suspended, provisioning or failed site has no running container; berth serve brings an active one back within a reconcile pass)`)
          return 1
        }
        throw err
      }
      const detach = attachTerminal(session.terminal, { stdin: process.stdin, stdout: process.stdout, signals: process })
      const hangups = Object.entries(HANGUPS).map(([signal, reason]) => {
        const onSignal = () => void session.close(reason)
        process.on(signal, onSignal)
        return () => process.off(signal, onSignal)
      })
      try {
        const code = await session.exited
        return code ?? 1
      } finally {
        hangups.forEach((off) => off())
        detach()
      }
    } finally {
      close()
    }
  },
}

function userOf(value: CommandContext['values'][string]): 'site' | 'root' {
  if (value === undefined || value === 'site') return 'site'
  if (value === 'root') return 'root'
  throw new UsageError(`--user ${String(value)}: give root, or leave it out for the site user (uid 1000)`)
}

/** Who runs it, for the audit trail: the person behind sudo, else the login user, else the uid. */
function adminOf(ctx: CommandContext): string {
  return ctx.env.SUDO_USER || ctx.env.USER || ctx.env.LOGNAME || `uid ${process.getuid?.() ?? '?'}`
}
