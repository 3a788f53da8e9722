import type { AdminAccountView } from '../domain/accounts'
import { MAX_REASON_LENGTH } from '../domain/sites'
import { COMMON_OPTIONS, STORE_OPTIONS, UsageError, type Command } from './command'
import { fields, onlyArgument, reasonFrom, shortTime, table, viaServer } from './admin'
import { STORE_NOTE } from './sites'

/**
 * `berth accounts ...`: the admin's commands on the accounts of this box (list, show, suspend,
 * resume), each a client of berth serve's admin socket (cli/admin.ts viaServer), which stops or
 * starts the sites a suspension holds.
 */

export const accountsListCommand: Command = {
  path: ['accounts', 'list'],
  summary: 'List every account of this box: id, status, email, sites, keys, created.',
  usage: 'berth accounts list [--json] [--data-dir DIR] [--config FILE]',
  description: ['One line per account, oldest first, anonymized (deleted) ones included. --json prints each', 'as berth accounts show --json does.', '', STORE_NOTE].join('\n'),
  options: { ...STORE_OPTIONS, ...COMMON_OPTIONS },
  examples: ['berth accounts list', 'berth accounts list --json'],
  run(ctx) {
    if (ctx.positionals.length > 0) throw new UsageError(`berth accounts list takes no argument (got ${ctx.positionals.join(' ')}); berth accounts show ID shows one account`)
    return viaServer<AdminAccountView[]>(ctx, 'accounts/list', {}, (list) => {
      ctx.out.result(list, () => list.length === 0 ? 'No accounts.' : table(
        ['ID', 'STATUS', 'EMAIL', 'SITES', 'KEYS', 'CREATED'],
        list.map((a) => [a.id, a.status, a.email ?? '-', a.sites.map((s) => s.slug).join(',') || '-', String(a.active_keys), shortTime(a.created_at)]),
      ))
      return 0
    })
  },
}

export const accountsShowCommand: Command = {
  path: ['accounts', 'show'],
  summary: 'Show one account: status (and why suspended), email, subscriptions, sites, keys.',
  usage: 'berth accounts show ID [--json] [--data-dir DIR] [--config FILE]',
  description: [STORE_NOTE, '', 'Exit status: 0; 2 for an unknown ID.'].join('\n'),
  options: { ...STORE_OPTIONS, ...COMMON_OPTIONS },
  examples: ['berth accounts show 0b7c0c7e-3f1a-4f57-9d5e-2a6f3c1d8e90'],
  run(ctx) {
    const id = onlyArgument(ctx, 'account id', 'berth accounts show ID')
    return viaServer<AdminAccountView>(ctx, 'accounts/show', { id }, (account) => {
      ctx.out.result(account, () => accountFields(account))
      return 0
    })
  },
}

export const accountsSuspendCommand: Command = {
  path: ['accounts', 'suspend'],
  summary: "Suspend an account, with a reason: its keys answer 403 and its sites are suspended.",
  usage: 'berth accounts suspend ID --reason TEXT [--json] [--data-dir DIR] [--config FILE]',
  description: [
    'Holds everything the account has: each of its API keys answers 403 FORBIDDEN ("The account',
    'of this API key is suspended by the hoster") on the API and MCP, and its active sites, and',
    'those billing had suspended, are suspended with it (suspended by account, with the reason),',
    'their containers stopped: the edge shows the suspended page. Sites you suspended one by one',
    '(berth sites suspend) keep their own suspension. Billing goes on as before.',
    '',
    STORE_NOTE,
    '',
    'Exit status: 0; 1 when the account is not active (already suspended, anonymized) or one of',
    'its sites is still being set up (retry in a minute); 2 for an unknown ID or a missing --reason.',
  ].join('\n'),
  options: {
    reason: { type: 'string', value: 'TEXT', help: `Why (required, at most ${MAX_REASON_LENGTH} characters); kept on each of its sites.` },
    ...STORE_OPTIONS,
    ...COMMON_OPTIONS,
  },
  examples: ["berth accounts suspend 0b7c0c7e-3f1a-4f57-9d5e-2a6f3c1d8e90 --reason 'chargeback fraud'"],
  run(ctx) {
    const usage = 'berth accounts suspend ID --reason TEXT'
    const id = onlyArgument(ctx, 'account id', usage)
    const reason = reasonFrom(ctx, usage)
    return viaServer<AdminAccountView>(ctx, 'accounts/suspend', { id, reason }, (account) => {
      const held = account.sites.filter((s) => s.suspended_by === 'account').map((s) => s.slug)
      ctx.out.result(account, () => `Suspended account ${id}: its keys answer 403${held.length ? `; sites suspended with it: ${held.join(', ')}` : ''}. berth accounts resume ${id} lifts it.`)
      return 0
    })
  },
}

export const accountsResumeCommand: Command = {
  path: ['accounts', 'resume'],
  summary: "Lift an account's suspension: its keys work again and its sites come back.",
  usage: 'berth accounts resume ID [--json] [--data-dir DIR] [--config FILE]',
  description: [
    'Undoes berth accounts suspend: its keys work again, and the sites suspended with the account',
    'are active again, their containers started (the command returns once they answer); a site',
    'whose subscription lapsed meanwhile stays suspended, by billing. Sites suspended one by one',
    '(berth sites suspend) stay suspended until berth sites resume.',
    '',
    STORE_NOTE,
    '',
    'Exit status: 0; 1 when the account is not suspended or a container would not start; 2 for an',
    'unknown ID.',
  ].join('\n'),
  options: { ...STORE_OPTIONS, ...COMMON_OPTIONS },
  examples: ['berth accounts resume 0b7c0c7e-3f1a-4f57-9d5e-2a6f3c1d8e90'],
  run(ctx) {
    const id = onlyArgument(ctx, 'account id', 'berth accounts resume ID')
    return viaServer<AdminAccountView>(ctx, 'accounts/resume', { id }, (account) => {
      ctx.out.result(account, () => `Resumed account ${id}: its keys work again${account.sites.length ? `; sites: ${account.sites.map((s) => `${s.slug} ${s.status}`).join(', ')}` : ''}.`)
      return 0
    })
  },
}

function accountFields(a: AdminAccountView): string {
  return fields([
    ['id', a.id],
    ['status', a.status],
    ...(a.suspended_reason ? [['reason', a.suspended_reason]] as [string, string][] : []),
    ['email', a.email ?? '-'],
    ['name', a.name],
    ['active keys', String(a.active_keys)],
    ['subscriptions', a.subscriptions.map((s) => `${s.id} (${s.plan}, ${s.status})`).join('; ') || '-'],
    ['sites', a.sites.map((s) => `${s.slug} (${s.status}${s.suspended_by ? ` by ${s.suspended_by}` : ''})`).join(', ') || '-'],
    ['created', a.created_at],
    ['updated', a.updated_at],
  ])
}
