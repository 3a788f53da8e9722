import type { StartInSite } from './processes'
import type { CommandResult, CommandSpec } from './types'

/** ContainerRuntime.runCommand over `start` (contract in ./types.ts). Built by issue 26's exec part. */
export async function runCommand(_start: StartInSite, _slug: string, _spec: CommandSpec): Promise<CommandResult> {
  throw new Error('runCommand is not built yet')
}
