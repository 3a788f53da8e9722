import type Docker from 'dockerode'
import type { Logger } from '../../lib/logger'
import { ignoring, orNull } from './engine'
import { LABEL } from './site-container'
import type { SiteStats } from './types'

/**
 * Work on one site container that both runtimes share (docker.ts on this box's engine, swarm/ on
 * the engine of the node that runs the site's task).
 */

/**
 * Runs `fn` with the container frozen (cgroup freezer) and always thaws it (ContainerRuntime.
 * withSitePaused); a container that does not run, or is frozen already, runs `fn` as it is.
 * `call` wraps each engine call (the runtime's "engine down" translation).
 */
export async function frozenWhile<T>(docker: Docker, info: Docker.ContainerInspectInfo | null, slug: string, fn: () => Promise<T>, call: <R>(f: () => Promise<R>) => Promise<R>, log: Logger): Promise<T> {
  if (!info?.State.Running || info.State.Paused) return fn()
  const container = docker.getContainer(info.Id)
  await call(() => ignoring([409], container.pause()))
  try {
    return await fn()
  } finally {
    await call(() => ignoring([409], container.unpause())).catch((err) => log.error('could not unpause a site', { site: slug, error: (err as Error).message }))
  }
}

/** The container's CPU (percent of one core) and memory now, as `docker stats` shows them. */
export async function containerStats(docker: Docker, containerId: string): Promise<SiteStats> {
  const s = (await docker.getContainer(containerId).stats({ stream: false })) as Docker.ContainerStats
  const cpuDelta = s.cpu_stats.cpu_usage.total_usage - (s.precpu_stats.cpu_usage?.total_usage ?? 0)
  const systemDelta = (s.cpu_stats.system_cpu_usage ?? 0) - (s.precpu_stats.system_cpu_usage ?? 0)
  const cpus = s.cpu_stats.online_cpus ?? 1
  const cpuPercent = systemDelta > 0 && cpuDelta >= 0 ? (cpuDelta / systemDelta) * cpus * 100 : 0
  // As `docker stats` shows it: usage less the reclaimable page cache.
  const cache = (s.memory_stats.stats as Record<string, number> | undefined)?.inactive_file ?? 0
  return { cpuPercent: Math.round(cpuPercent * 100) / 100, memoryBytes: Math.max(0, (s.memory_stats.usage ?? 0) - cache), memoryLimitBytes: s.memory_stats.limit ?? 0 }
}

/**
 * Creates the site's volume `name` when missing. A volume of this name that belongs to another
 * site id is never mounted: it would hand that site's files to this one.
 */
export async function ensureSiteVolume(docker: Docker, name: string, labels: Record<string, string>): Promise<void> {
  const volume = await orNull(docker.getVolume(name).inspect())
  if (!volume) {
    await docker.createVolume({ Name: name, Labels: labels })
    return
  }
  const owner = volume.Labels?.[LABEL.siteId]
  if (owner !== labels[LABEL.siteId]) {
    throw new Error(`The volume ${name} holds the files of another site (id ${owner ?? 'unknown'}); remove it or restore that site first.`)
  }
}
