import type { ContainerRuntime } from '../../drivers/runtime/types'
import { NotRegularError, openFileBeneath } from '../../lib/open-beneath'
import { ConflictError } from '../http/errors'
import type { Principal } from '../keys/service'
import type { PlansService } from '../plans/service'
import type { SitesService } from '../sites/service'
import type { SiteLog } from './model'
import { logSource, type LogType } from './sources'
import { tailLines } from './tail'

/**
 * GET /sites/{slug}/logs/: the newest lines of a site's log, read from its volume on the host
 * (no engine call, and it works while the container is stopped). The tenant owns ~/logs, so the
 * file is opened without following symlinks and must be a regular file.
 */
export class LogsService {
  constructor(private sites: SitesService, private plans: PlansService, private runtime: ContainerRuntime) {}

  async read(p: Principal, slug: string, q: { type?: LogType; lines?: number; search?: string }): Promise<SiteLog> {
    const site = this.sites.requireOwned(p, slug)
    const type = q.type ?? 'error'
    const source = logSource(this.plans.get(site.planSlug).hosting_type, type)
    if (source.file === null) return { type, file: null, lines: [] }
    const home = await this.runtime.homePath(site.slug)
    const parts = source.file.split('/')
    const file = await openFileBeneath(home, parts.slice(0, -1), parts.at(-1)!).catch((err) => {
      if (err instanceof NotRegularError) {
        throw new ConflictError(`~/${source.file} is not a regular file (${err.message}); delete it and the web server writes a new one when the site restarts.`, 'type')
      }
      throw err
    })
    if (!file) return { type, file: source.file, lines: [] }
    try {
      const filter = source.filter?.()
      const search = q.search || undefined
      const keep = filter || search ? (line: string) => (!filter || filter(line)) && (search === undefined || line.includes(search)) : undefined
      return { type, file: source.file, lines: await tailLines(file, { lines: q.lines ?? 100, keep }) }
    } finally {
      await file.close()
    }
  }
}
