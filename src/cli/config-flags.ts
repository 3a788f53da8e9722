import { loadConfig, type Config } from '../config/config'
import type { CommandContext } from './command'

/** Loads the config the way every command does: file, then BERTH_* variables, then flags. */
export function configFrom(ctx: CommandContext): Config {
  const v = ctx.values
  return loadConfig({
    file: v.config as string | undefined,
    env: ctx.env,
    flags: {
      'server.listen': v.listen as string | undefined,
      'server.data_dir': v['data-dir'] as string | undefined,
      'server.site_url': v['site-url'] as string | undefined,
    },
  })
}
