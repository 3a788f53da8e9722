/**
 * `buildApp(config, role)`: what each way the binary runs builds, typed by its role, so an entry
 * point gets the facades it uses and not the whole composition.
 *
 * - `serve`: `berth serve`: what `startServer` takes (`ServerDeps`), the log, the status, and the
 *   store's close.
 * - `admin`: the admin API's facades (admin/facades.ts) in a read-only command's own process,
 *   when no `berth serve` runs (it holds the data folder's lock), nothing started. `berth serve`
 *   builds the same facades as part of its role and hands them to its admin socket.
 * - `restore`: `berth restore`'s second half, `SitesReturn`, over the store it put back.
 *
 * The node agent (`berth node`) has a composition of its own, in its own folder (issue 37 item 4).
 * A leaf of compose/: it imports index.ts, and nothing in compose/ imports it.
 */
import type { Config } from '../config/config'
import type { StatusInfo } from '../domain/status'
import type { Logger } from '../lib/logger'
import type { ServerDeps } from '../server'
import type { AdminFacades } from '../admin/facades'
import { adminFacadesOf } from './admin'
import type { BuildOptions } from './core'
import { buildServices } from './index'
import { buildSitesReturn } from './restore'
import type { SitesReturn } from '../domain/offsite'

export type Role = 'serve' | 'admin' | 'restore'

export interface ServeApp {
  /** What the listeners and the background work read (src/server.ts). */
  server: ServerDeps
  log: Logger
  status: StatusInfo
  /** The admin API's facades, served on the admin socket (admin/listener.ts). */
  admin: AdminFacades
  /** Closes the store, once the server has stopped. */
  close(): void
}

export interface RestoreApp {
  sitesReturn: SitesReturn
  close(): void
}

export interface AdminApp {
  facades: AdminFacades
  close(): Promise<void>
}

export interface AppOf {
  serve: ServeApp
  admin: AdminApp
  restore: RestoreApp
}

/**
 * Opens (and migrates) the store and builds the composition once, then hands the role its part.
 * Nothing is started but by `serve` (startServer); `admin` also stops the job runner at once: the
 * jobs an operation enqueues are the running server's to run, never this process's.
 */
export function buildApp<R extends Role>(config: Config, role: R, opts: BuildOptions = {}): AppOf[R] {
  const s = buildServices(config, opts)
  if (role === 'serve') {
    const app: ServeApp = { server: s, log: s.log, status: s.status, admin: adminFacadesOf(s, s.log), close: () => s.store.close() }
    return app as AppOf[R]
  }
  if (role === 'restore') {
    const app: RestoreApp = { sitesReturn: buildSitesReturn(s), close: () => s.store.close() }
    return app as AppOf[R]
  }
  const jobsStopped = s.jobs.stop()
  const app: AdminApp = {
    facades: adminFacadesOf(s, opts.log ?? s.log),
    close: async () => {
      await jobsStopped
      s.store.close()
    },
  }
  return app as AppOf[R]
}
