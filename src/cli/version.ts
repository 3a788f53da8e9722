import { MIGRATIONS } from '../store/migrations'
import { VERSION } from '../version'
import { COMMON_OPTIONS, type Command } from './command'

export const versionCommand: Command = {
  path: ['version'],
  summary: 'Print the version of this binary.',
  usage: 'berth version [--json]',
  options: { ...COMMON_OPTIONS },
  run(ctx) {
    const info = { version: VERSION, api_version: 'v1', bun: Bun.version, schema: MIGRATIONS.at(-1)?.id ?? null }
    ctx.out.result(info, () => `berth ${VERSION} (API v1, schema ${info.schema}, bun ${Bun.version})`)
    return 0
  },
}
