import type { DbEngine } from '../../domain/databases'
import type { Logger } from '../../lib/logger'
import { CONTROL_NODE } from '../cluster/types'
import { openEngine } from '../runtime/engine'
import { firstHeld, HELPER_IMAGES, SiteDisks } from '../runtime/site-disks'
import type { Engine } from '../runtime/site-runtime'
import { DockerDatabaseRuntime } from './runtime'

export interface LocalDatabaseRuntimeOptions {
  socketPath: string
  instanceId: string
  log: Logger
  images: Record<DbEngine, string>
  /** The images the disks helper may run (as DockerRuntime's helperImages). */
  helperImages?: string[]
  startTimeoutMs?: number
}

/**
 * The database runtime of a single box: every database on this box's engine, beside its site
 * (wave 2 gives it the cluster's engine lookup, SiteHost.volumeOn, instead). The engine client is
 * opened on first use, as DockerRuntime's is.
 */
export function localDatabaseRuntime(opts: LocalDatabaseRuntimeOptions): DockerDatabaseRuntime {
  let engine: Promise<Engine> | undefined
  const engineOf = () => (engine ??= openEngine(opts.socketPath).then((docker) => ({ nodeId: CONTROL_NODE, node: null, docker, bulk: docker, address: opts.socketPath, key: opts.socketPath })))
  const disks = new SiteDisks({ instanceId: opts.instanceId, log: opts.log, imageOn: (e) => firstHeld(e.docker, opts.helperImages ?? HELPER_IMAGES) })
  return new DockerDatabaseRuntime({
    instanceId: opts.instanceId,
    log: opts.log,
    images: opts.images,
    engineOf,
    allEngines: async () => [await engineOf()],
    disks,
    startTimeoutMs: opts.startTimeoutMs,
  })
}
