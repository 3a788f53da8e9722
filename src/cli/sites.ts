import { buildAdminShell } from '../compose/shell'
import { MAX_REASON_LENGTH, type AdminSiteView } from '../domain/sites'
import { DomainError } from '../domain/errors'
import { SiteNotRunnableError } from '../drivers/runtime/types'
import { createLogger } from '../lib/logger'
import { COMMON_OPTIONS, STORE_OPTIONS, UsageError, type Command, type CommandContext } from './command'
import { fields, onlyArgument, reasonFrom, shortTime, table, viaServer } from './admin'
import { configFrom } from './config-flags'
import { attachTerminal, localSize } from './terminal-io'
import { CLUSTER_NOTE, MOVE_STEPS_EXAMPLE, STEPS_NOTE, withNodeOps } from './nodes'
import type { MoveView } from '../domain/cluster'
import { formatSpan } from '../domain/offsite'

/**
 * `berth sites ...`: the admin's commands on the sites of this box. list, show, suspend, resume,
 * delete and move are clients of berth serve's admin socket (cli/admin.ts viaServer; move
 * through cli/nodes.ts's withNodeOps); shell runs in this process (see its description). Each
 * subcommand is a Command of path ['sites', name]; `berth sites --help` lists them.
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
    '(uid 0 in the container, still without any capability; HOME=/root, and its interactive',
    'shell reads no login or rc script, since the tenant writes those in its home; it starts in',
    '/home/site all the same). Your terminal is put in raw mode while it runs (Ctrl-C and Ctrl-D',
    'go to the shell), and its window size is followed. Runs in this process, not through berth',
    'serve: it reads the site from the store of --data-dir or the config, talks to Docker, and',
    'adds one row to the audit trail (whether or not berth serve runs; SQLite serializes the',
    "write): a terminal is a byte stream from the engine's exec, and berth serve owns no state of it.",
    '',
    "Every session is recorded in the site's audit trail, which its owner reads with",
    'GET /sites/SLUG/logs/?type=audit: kind shell, admin=$SUDO_USER or $USER, as=root, the',
    'command, its exit code and duration. See docs/operations.md, "A shell in a site".',
    '',
    "Exit status: the command's (the shell's: that of its last command or `exit N`); 1 when the",
    "site's container is not running (or is restarting) or the engine cannot say; 2 for a",
    'usage error or an unknown or deleted SLUG.',
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

export const STORE_NOTE = [
  'Asks the berth serve of --data-dir or the config (over its admin socket, DATA_DIR/admin.sock,',
  'root only), which does it and answers. With no berth serve running it exits 1 saying how to',
  'start it; list and show then read the store themselves (holding DATA_DIR/berth.lock).',
].join('\n')

const SITE_STATUSES_SHOWN = ['provisioning', 'active', 'suspended', 'pending_deletion', 'failed']

export const sitesListCommand: Command = {
  path: ['sites', 'list'],
  summary: 'List every site of this box (any account): slug, status, plan, account, SSH port, created.',
  usage: 'berth sites list [--account ID] [--status STATUS] [--json] [--data-dir DIR] [--config FILE]',
  description: [
    'One line per live site (deleted sites are not listed), oldest first. NOTE is why a suspended',
    'site is suspended (by billing, admin or account, and the reason) or when a site pending',
    'deletion goes. --json prints each site as berth sites show --json does.',
    '',
    STORE_NOTE,
  ].join('\n'),
  options: {
    account: { type: 'string', value: 'ID', help: "Only this account's sites." },
    status: { type: 'string', value: 'STATUS', help: `Only sites in this status: ${SITE_STATUSES_SHOWN.join(', ')}.` },
    ...STORE_OPTIONS,
    ...COMMON_OPTIONS,
  },
  examples: ['berth sites list', 'berth sites list --status suspended', 'berth sites list --json | jq -r ".[].slug"'],
  run(ctx) {
    const status = ctx.values.status
    if (status !== undefined && !SITE_STATUSES_SHOWN.includes(String(status))) throw new UsageError(`--status ${String(status)}: give one of ${SITE_STATUSES_SHOWN.join(', ')}`)
    if (ctx.positionals.length > 0) throw new UsageError(`berth sites list takes no argument (got ${ctx.positionals.join(' ')}); berth sites show SLUG shows one site`)
    return viaServer<AdminSiteView[]>(ctx, 'sites/list', { account: ctx.values.account, status }, (list) => {
      ctx.out.result(list, () => list.length === 0 ? 'No sites.' : table(
        ['SLUG', 'STATUS', 'PLAN', 'TYPE', 'ACCOUNT', 'SSH', 'CREATED', 'NOTE'],
        list.map((s) => [s.slug, s.status, s.plan, s.hosting_type, s.account.id, s.ssh_port === null ? '-' : String(s.ssh_port), shortTime(s.created_at), noteOf(s)]),
      ))
      return 0
    })
  },
}

export const sitesShowCommand: Command = {
  path: ['sites', 'show'],
  summary: "Show one site: its owner, plan, status and suspension, URL, domains, SSH port, subscription.",
  usage: 'berth sites show SLUG [--json] [--data-dir DIR] [--config FILE]',
  description: [
    "The site as its owner's GET /sites/SLUG/ shows it (with its suspension: by billing, admin or",
    'account, and the reason), and what only the box knows: the account (id, email, status), the',
    "host's SSH port, the subscription's status, when the record last changed.",
    '',
    STORE_NOTE,
    '',
    'Exit status: 0; 2 for an unknown or deleted SLUG.',
  ].join('\n'),
  options: { ...STORE_OPTIONS, ...COMMON_OPTIONS },
  examples: ['berth sites show shop', 'berth sites show shop --json'],
  run(ctx) {
    const slug = onlyArgument(ctx, 'slug', 'berth sites show SLUG')
    return viaServer<AdminSiteView>(ctx, 'sites/show', { slug }, (site) => {
      ctx.out.result(site, () => siteFields(site))
      return 0
    })
  },
}

export const sitesSuspendCommand: Command = {
  path: ['sites', 'suspend'],
  summary: 'Suspend a site, with a reason: the edge shows the suspended page, the container stops.',
  usage: 'berth sites suspend SLUG --reason TEXT [--json] [--data-dir DIR] [--config FILE]',
  description: [
    "Marks the site suspended by the admin, with the reason (its owner sees both in the site's",
    '`suspension`, GET /sites/SLUG/), then stops its container (files kept). The edge answers the',
    "same suspended page (503) as for an unpaid site at once; the owner's changes to the site answer 409. A payment does not lift an",
    "admin's suspension: only berth sites resume does. A site billing had suspended becomes the",
    "admin's; suspending an admin-suspended site again replaces the reason.",
    '',
    STORE_NOTE,
    '',
    'Exit status: 0; 1 when the site is not active or suspended (provisioning, pending deletion,',
    'failed, or suspended with its account); 2 for an unknown SLUG or a missing --reason.',
  ].join('\n'),
  options: {
    reason: { type: 'string', value: 'TEXT', help: `Why (required, at most ${MAX_REASON_LENGTH} characters); shown to the owner.` },
    ...STORE_OPTIONS,
    ...COMMON_OPTIONS,
  },
  examples: ["berth sites suspend shop --reason 'phishing page reported by abuse@bank.example'"],
  run(ctx) {
    const usage = 'berth sites suspend SLUG --reason TEXT'
    const slug = onlyArgument(ctx, 'slug', usage)
    const reason = reasonFrom(ctx, usage)
    return viaServer<AdminSiteView>(ctx, 'sites/suspend', { slug, reason }, (site) => {
      ctx.out.result(site, () => `Suspended ${slug} (${reason.trim()}); its container is stopped and the edge shows the suspended page. berth sites resume ${slug} lifts it.`)
      return 0
    })
  },
}

export const sitesResumeCommand: Command = {
  path: ['sites', 'resume'],
  summary: "Lift an admin's suspension: the site is active again and its container started.",
  usage: 'berth sites resume SLUG [--json] [--data-dir DIR] [--config FILE]',
  description: [
    'Lifts a suspension made by berth sites suspend: the site is active again, its container is',
    'started, and the command returns once its web server answers (the edge serves it again). If',
    'its subscription lapsed meanwhile, the site stays suspended, by billing now, and comes back',
    'when a payment goes through.',
    '',
    'A suspension by billing (unpaid subscription) is not lifted here: the site comes back by',
    'itself when its owner pays (the billing portal); there is no --force, so that the hoster does',
    "not serve an unpaid site by accident. A site suspended with its account comes back with",
    'berth accounts resume ID.',
    '',
    STORE_NOTE,
    '',
    "Exit status: 0; 1 when the site is not suspended by the admin (billing's or the account's",
    "suspension, not suspended) or its container would not start; 2 for an unknown SLUG.",
  ].join('\n'),
  options: { ...STORE_OPTIONS, ...COMMON_OPTIONS },
  examples: ['berth sites resume shop'],
  run(ctx) {
    const slug = onlyArgument(ctx, 'slug', 'berth sites resume SLUG')
    return viaServer<AdminSiteView>(ctx, 'sites/resume', { slug }, (site) => {
      ctx.out.result(site, () => site.status === 'active'
        ? `Resumed ${slug}: active, its container answers.`
        : `Lifted the admin's suspension of ${slug}, but its subscription is ${site.subscription_status}: it stays suspended by billing until a payment goes through.`)
      return 0
    })
  },
}

export const sitesDeleteCommand: Command = {
  path: ['sites', 'delete'],
  summary: "Delete a site: scheduled after the 7-day grace period as the API's delete does, or --now.",
  usage: 'berth sites delete SLUG [--now] [--json] [--data-dir DIR] [--config FILE]',
  description: [
    "Without --now, as the owner's DELETE /sites/SLUG/ does: the site is pending_deletion for 7",
    'days, its container stopped (the edge shows the pending-deletion page), and its owner can',
    'still restore it (POST /sites/SLUG/restore/); berth serve removes it when the grace period',
    'ends.',
    '',
    'With --now, at once and for good: the container, network and files, the snapshots and',
    'backups, the DNS records and site-scoped keys go, and its subscription ends if no other site',
    'uses it. Irreversible. A site still provisioning cannot be deleted either way.',
    '',
    STORE_NOTE,
    '',
    'Exit status: 0; 1 when the site cannot be deleted in its state (provisioning; already',
    'pending deletion without --now) or the engine would not remove it; 2 for an unknown SLUG.',
  ].join('\n'),
  options: {
    now: { type: 'boolean', help: 'Remove it now, skipping the grace period (irreversible).' },
    ...STORE_OPTIONS,
    ...COMMON_OPTIONS,
  },
  examples: ['berth sites delete shop', 'berth sites delete shop --now'],
  run(ctx) {
    const slug = onlyArgument(ctx, 'slug', 'berth sites delete SLUG [--now]')
    return viaServer<AdminSiteView>(ctx, 'sites/delete', { slug, now: ctx.values.now === true }, (site) => {
      ctx.out.result(site, () => site.status === 'deleted'
        ? `Deleted ${slug}: its container, files, archives, DNS records and site keys are gone.`
        : `Scheduled ${slug} for deletion on ${site.deletion_scheduled_for}; its container is stopped. Its owner can restore it until then; berth sites delete ${slug} --now removes it at once.`)
      return 0
    })
  },
}

export const sitesMoveCommand: Command = {
  path: ['sites', 'move'],
  summary: 'Move a site to another node of the cluster; says how long it did not serve.',
  usage: 'berth sites move SLUG --to NODE [--json] [--data-dir DIR] [--config FILE]',
  description: [
    'Puts the site\'s image on NODE first when it lacks it (no registry: the control plane\'s copy;',
    'berth/app:1, an app site\'s, is 632 MB), while the site serves; if it cannot, nothing moves.',
    'Then takes an archive of the site (a backup, made with the site frozen for a moment while it keeps',
    'serving), stops it on its node, puts its files back on NODE from that archive, starts it there',
    'and waits for it to answer, then removes its files from the old node. From just before the',
    'stop (berth serve\'s edge is told first, and its view shows the site recovering) to the answer,',
    'visitors get the "being brought back" page (503, reloading by itself); the command prints how',
    'long that was as berth serve\'s edge saw it (asked on server.listen; with --json, edge_serves',
    'says whether it could). What the site wrote between the archive and the stop (a few',
    'seconds) is not carried over: move a busy site at a quiet hour. NODE is a node id from berth',
    'nodes list, or control for the control plane.',
    '',
    `${STEPS_NOTE} For example:`,
    '  moving shop to node_7f3k2q: archive, stop, restore there, start, wait for its answer',
    ...MOVE_STEPS_EXAMPLE,
    '  Moved shop from control to node_7f3k2q: it did not serve for 1.4 s (the whole move took 3 s); ...',
    '',
    CLUSTER_NOTE,
    '',
    'berth serve runs the move: killing this command does not stop it. A berth serve killed after',
    'the stop finishes the move at its next start: the site ends on NODE with the archive\'s files,',
    'and its old files stay on the old node (docs/cluster.md says how to remove them).',
    '',
    'Exit status: 0; 1 when the site is already on NODE, has nothing to move (provisioning, failed)',
    'or the move failed (its files stay on the old node); 2 for an unknown SLUG, or a NODE that is',
    'unknown, draining, down or removed.',
  ].join('\n'),
  options: {
    to: { type: 'string', value: 'NODE', help: 'The node to move it to (an active one; control for the control plane).' },
    ...STORE_OPTIONS,
    ...COMMON_OPTIONS,
  },
  examples: ['berth sites move shop --to node_7f3k2q', 'berth sites move shop --to control --json'],
  run(ctx) {
    const usage = 'berth sites move SLUG --to NODE'
    const slug = onlyArgument(ctx, 'slug', usage)
    const to = ctx.values.to
    if (typeof to !== 'string' || !to.trim()) throw new UsageError(`give the node to move it to with --to NODE (berth nodes list shows them): ${usage}`)
    return withNodeOps(ctx, 'sites/move', { slug, to: to.trim() }, (moved: MoveView) => {
      ctx.out.result(moved, () => moveText(moved))
      return 0
    })
  },
}

function moveText(m: MoveView): string {
  const gap = m.unavailable_ms < 10_000 ? `${(m.unavailable_ms / 1000).toFixed(1)} s` : formatSpan(m.unavailable_ms)
  const seen = m.edge_serves === true ? '' : m.edge_serves === false ? ', and berth serve\'s edge does not serve it yet (its log says why)' : ' as this command saw it (berth serve\'s edge did not answer)'
  return `Moved ${m.slug} from ${m.from} to ${m.to}: it did not serve for ${gap}${seen} (the whole move took ${formatSpan(m.total_ms)}); its data is from ${m.archive.created_at} (archive ${m.archive.id}).`
}

/** What the NOTE column says of a site: its suspension, or when it goes. */
function noteOf(site: AdminSiteView): string {
  if (site.suspension) return `by ${site.suspension.by}${site.suspension.reason ? `: ${site.suspension.reason}` : ''}`
  if (site.deletion_scheduled_for) return `deleted on ${shortTime(site.deletion_scheduled_for)}`
  if (site.error) return site.error
  return ''
}

function siteFields(site: AdminSiteView): string {
  return fields([
    ['slug', site.slug],
    ['status', site.status],
    ...(site.suspension ? [['suspended by', site.suspension.by], ['reason', site.suspension.reason ?? '-']] as [string, string][] : []),
    ['account', `${site.account.id} (${site.account.email ?? 'no email'}, ${site.account.status})`],
    ['plan', `${site.plan} (${site.hosting_type}; ${site.resources.memory_mb} MB, ${site.resources.cpu_cores} CPU, ${site.resources.disk_gb} GB)`],
    ['url', site.url],
    ['domains', site.domains.join(', ') || '-'],
    ['ssh port', site.ssh_port === null ? '-' : String(site.ssh_port)],
    ['subscription', site.subscription_id ? `${site.subscription_id} (${site.subscription_status})` : '-'],
    ['created', site.created_at],
    ['updated', site.updated_at],
    ...(site.deletion_scheduled_for ? [['deletion', site.deletion_scheduled_for]] as [string, string][] : []),
    ...(site.error ? [['error', site.error]] as [string, string][] : []),
  ])
}
