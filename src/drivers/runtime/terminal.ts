import type { StartInSite } from './processes'
import type { Terminal, TerminalSpec } from './types'

/** ContainerRuntime.openTerminal over `start` (contract in ./types.ts). Built by issue 26's console part. */
export async function openTerminal(_start: StartInSite, _slug: string, _spec: TerminalSpec): Promise<Terminal> {
  throw new Error('openTerminal is not built yet')
}
