import type { SiteRow } from '../../store/schema'

/**
 * The app image's launcher (drivers/runtime/image-app.ts): runs its argv with the site's settings
 * and secrets of /tmp/berth/env.json added. Exec, the console and `berth sites shell` (as the site
 * user) start through it on an app site, so a command there sees what the app sees.
 */
export const APP_ENV_COMMAND = 'berth-env'

/** `argv` as it starts in the site: through berth-env on an app site, as it is elsewhere. */
export function inAppEnv(site: Pick<SiteRow, 'runtime'>, argv: string[]): string[] {
  return site.runtime !== null ? [APP_ENV_COMMAND, ...argv] : argv
}
