import { ConfigError } from '../config/config'
import { MigrationError } from '../store/migrate'
import { VERSION } from '../version'
import { createOutput, parseCommandArgs, renderHelp, UsageError, type Command } from './command'
import { doctorCommand } from './doctor'
import { firewallApplyCommand, firewallCheckCommand, firewallRemoveCommand } from './firewall'
import { imagesBuildCommand } from './images'
import { installCommand } from './install'
import { instanceCommand } from './instance'
import { migrateCommand } from './migrate'
import { nodeJoinCommand, nodeServeCommand } from './node'
import { nodesTokenCommand } from './nodes-token'
import { offsitePushCommand, offsiteStatusCommand } from './offsite'
import { plansAddCommand, plansDeprecateCommand, plansListCommand } from './plans'
import { restoreCommand } from './restore'
import { serveCommand } from './serve'
import { accountsListCommand, accountsResumeCommand, accountsShowCommand, accountsSuspendCommand } from './accounts'
import { sitesDeleteCommand, sitesListCommand, sitesMoveCommand, sitesResumeCommand, sitesShellCommand, sitesShowCommand, sitesSuspendCommand } from './sites'
import { NODE_OPS_COMMANDS } from './nodes'
import { nodesSetCommand } from './nodes-set'
import { upgradeCommand } from './upgrade'
import { versionCommand } from './version'

export const COMMANDS: Command[] = [
  serveCommand,
  migrateCommand,
  restoreCommand,
  sitesListCommand,
  sitesShowCommand,
  sitesSuspendCommand,
  sitesResumeCommand,
  sitesDeleteCommand,
  sitesShellCommand,
  sitesMoveCommand,
  accountsListCommand,
  accountsShowCommand,
  accountsSuspendCommand,
  accountsResumeCommand,
  plansListCommand,
  plansAddCommand,
  plansDeprecateCommand,
  imagesBuildCommand,
  installCommand,
  doctorCommand,
  upgradeCommand,
  instanceCommand,
  firewallCheckCommand,
  firewallApplyCommand,
  firewallRemoveCommand,
  offsiteStatusCommand,
  offsitePushCommand,
  ...NODE_OPS_COMMANDS,
  nodesSetCommand,
  nodesTokenCommand,
  nodeJoinCommand,
  nodeServeCommand,
  versionCommand,
]

export function renderMainHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.path.join(' ').length)) + 2
  return [
    `berth ${VERSION}: one executable that runs a web-hosting business for AI agents.`,
    '',
    'Usage: berth <command> [options]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.path.join(' ').padEnd(width)}${c.summary}`),
    '',
    'Every command takes --help; admin commands take --json. The admin commands (sites, accounts,',
    'plans, nodes, offsite push) ask the running berth serve over its admin socket, DATA_DIR/admin.sock',
    '(root only); with none running, those that change something exit 1 saying how to start it.',
    'Configuration: /etc/berth/berth.toml (or --config FILE / $BERTH_CONFIG), each key overridable by',
    'BERTH_<SECTION>_<KEY>; see docs/configuration.md. Exit status: 0 success, 1 failure, 2 usage or',
    'configuration error.',
  ].join('\n')
}

/** `berth images --help`: the subcommands of a group, each with its summary. */
function renderGroupHelp(name: string, group: Command[]): string {
  const width = Math.max(...group.map((c) => c.path.join(' ').length)) + 2
  return [
    `Usage: berth ${name} <subcommand> [options]`,
    '',
    'Subcommands:',
    ...group.map((c) => `  ${c.path.join(' ').padEnd(width)}${c.summary}`),
    '',
    `Run berth ${name} <subcommand> --help for its options.`,
  ].join('\n')
}

/** Runs the command line; returns the exit status. */
export async function runCli(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help' && argv.length === 1) {
    process.stdout.write(renderMainHelp() + '\n')
    return argv.length === 0 ? 2 : 0
  }
  if (argv[0] === '--version' || argv[0] === '-v') argv = ['version', ...argv.slice(1)]
  const wantsHelpFor = argv[0] === 'help'
  const words = wantsHelpFor ? argv.slice(1) : argv
  const cmd = [...COMMANDS].sort((a, b) => b.path.length - a.path.length).find((c) => c.path.every((w, i) => words[i] === w))
  const json = argv.includes('--json')
  const out = createOutput(json)
  if (!cmd) {
    const group = COMMANDS.filter((c) => c.path[0] === words[0])
    if (group.length > 0 && (wantsHelpFor || words.includes('--help') || words.includes('-h'))) {
      process.stdout.write(renderGroupHelp(words[0], group) + '\n')
      return 0
    }
    if (group.length > 0) {
      out.error(`'${words.join(' ')}' needs a subcommand: ${group.map((c) => c.path.join(' ')).join(', ')}`)
    } else {
      out.error(`unknown command '${words[0]}'; run berth --help for the list`)
    }
    return 2
  }
  if (wantsHelpFor) {
    process.stdout.write(renderHelp(cmd) + '\n')
    return 0
  }
  try {
    const { values, positionals } = parseCommandArgs(cmd, argv.slice(cmd.path.length))
    if ((values as Record<string, unknown>).help) {
      process.stdout.write(renderHelp(cmd) + '\n')
      return 0
    }
    return await cmd.run({ values: values as never, positionals, env, out })
  } catch (err) {
    if (err instanceof UsageError || err instanceof ConfigError || err instanceof MigrationError) {
      out.error(err.message)
      if (err instanceof UsageError) out.info(`Usage: ${cmd.usage}`)
      return 2
    }
    out.error(`failed: ${(err as Error).message}`)
    return 1
  }
}
