import type Docker from 'dockerode'
import { ignoring, orNull } from '../engine'
import { LABEL, siteFilter } from '../site-container'
import { HostPortTakenError } from '../types'
import type { Engine } from './node-engines'
import type { SiteServices } from './site-services'

/** Between two looks for a task's container; Swarm starts one in about a second. */
const POLL_MS = 100
/** How long Swarm must say a task's host port is in use before it counts as taken by another. */
const PORT_TAKEN_MS = 5000
/** Rejected tasks (the node could not make the container) after which a start gives up at once. */
const REJECTED_LIMIT = 3
/** How long a stop or removal waits for the node to drop the task's container. */
export const GONE_WITHIN_MS = 30_000

/**
 * The containers of a site's tasks on its node's engine. Swarm names them
 * `{service}.1.{task id}` and gives each the ContainerSpec's labels, so they are found by the
 * site's labels; an ended task's container stays a while (Swarm's task history).
 */

/** A site's task containers (labelled `managed`), never its databases beside them (drivers/databases: no `managed` label). */
function taskFilter(instanceId: string, slug: string): { label: string[] } {
  return { label: [...siteFilter(instanceId, slug).label, `${LABEL.managed}=true`] }
}

/** The site's container on the node: the running one, else the newest. */
export async function siteContainer(engine: Engine, instanceId: string, slug: string): Promise<Docker.ContainerInspectInfo | null> {
  const found = await engine.docker.listContainers({ all: true, filters: taskFilter(instanceId, slug) })
  const pick = found.sort((a, b) => Number(b.State === 'running') - Number(a.State === 'running') || b.Created - a.Created)[0]
  if (!pick) return null
  const info = await orNull(engine.docker.getContainer(pick.Id).inspect())
  return info?.Config.Labels?.[LABEL.instance] === instanceId ? info : null
}

/**
 * The site's running container on the node once it runs (not `before`, the one replaced), asking
 * `problem` (Swarm's word on the failed task) every second: a host port taken is thrown at once
 * as HostPortTakenError (Swarm retries such a task for ever), anything else is named when
 * `withinMs` ran out.
 */
export async function untilRunning(
  engine: Engine, instanceId: string, slug: string,
  opts: { before: string | null; sshPort: number | null; withinMs: number; problem: (since: number) => Promise<{ error: string | null; rejected: number }> },
): Promise<Docker.ContainerInspectInfo> {
  const startedAt = Date.now()
  const deadline = startedAt + opts.withinMs
  const filters = { label: taskFilter(instanceId, slug).label, status: ['running'] }
  let lastTaskCheck = 0
  let problem = ''
  let portTakenSince: number | null = null
  for (;;) {
    const running = (await engine.docker.listContainers({ filters })).filter((c) => c.Id !== opts.before)
    if (running[0]) {
      const info = await orNull(engine.docker.getContainer(running[0].Id).inspect())
      if (info?.State.Running) return info
    }
    if (Date.now() - lastTaskCheck > 1000) {
      lastTaskCheck = Date.now()
      const found = await opts.problem(startedAt - 1000)
      const now = found.error ?? ''
      problem = now || problem
      // A port held by this site's own task being replaced frees within a second or two, and
      // Swarm then schedules the new one: only a port still taken after PORT_TAKEN_MS is another's.
      const portTaken = opts.sshPort && /port/i.test(now) && /in use|allocated/i.test(now)
      if (portTaken) portTakenSince ??= Date.now()
      else if (now) portTakenSince = null
      if (opts.sshPort && portTakenSince !== null && Date.now() - portTakenSince >= PORT_TAKEN_MS) {
        throw new HostPortTakenError(opts.sshPort, `Host port ${opts.sshPort} for the SSH of '${slug}' is taken on node ${engine.nodeId} (Swarm: ${problem}).`)
      }
      // Swarm tries a rejected task again every few seconds for ever: a node that rejected it
      // REJECTED_LIMIT times will not take it (waiting out withinMs kept a move's site down a minute).
      if (!portTaken && found.rejected >= REJECTED_LIMIT) {
        throw new Error(`Node ${engine.nodeId} rejected the task of '${slug}' ${found.rejected} times${problem ? `: ${problem}` : ''}.`)
      }
    }
    if (Date.now() > deadline) throw new Error(`The site '${slug}' did not start on node ${engine.nodeId} within ${Math.round(opts.withinMs / 1000)} s${problem ? `: ${problem}` : ''}.`)
    await Bun.sleep(POLL_MS)
  }
}

/**
 * Stops the site's running container on its node's own engine, not through its service: Swarm,
 * seeing the task end, replaces it at once (restart condition `any`, 0.2 s) unless the service no
 * longer wants it there (scaled to 0, placed on another node). A stop through the service waits
 * first for the manager's dispatch and moby's gossip delay (2 s for every task on a network,
 * defaultGossipConvergeDelay in its executor): about 3 s on the lab before the container even got
 * its SIGTERM, against some 60 ms this way. docker-init forwards the SIGTERM; 10 s as the service's grace.
 */
export async function stopOnNode(engine: Engine, instanceId: string, slug: string): Promise<void> {
  const running = await engine.docker.listContainers({ filters: { label: taskFilter(instanceId, slug).label, status: ['running', 'restarting'] } })
  await Promise.all(running.map((c) => ignoring([304, 404], engine.docker.getContainer(c.Id).stop({ t: 10 }))))
}

/**
 * After its service was scaled to 0 (a move's switch): the site's container on the node it left
 * is stopped there (stopOnNode) as soon as Swarm no longer wants it, some 3 s before Swarm's own
 * stop would reach it, and waited for until it no longer runs. Should Swarm still want it after 3
 * s (about when its own stop lands), its stop is left to Swarm.
 */
export async function stopLeft(old: Engine, services: Pick<SiteServices, 'untilNoneWanted'>, instanceId: string, slug: string): Promise<void> {
  if (await services.untilNoneWanted(slug, 3_000)) await stopOnNode(old, instanceId, slug).catch(() => {})
  await untilNoContainer(old, instanceId, slug, true)
}

/**
 * The site's database containers on its node (drivers/databases: its labels, no `managed`), removed
 * with the site: they hold its swarm network, which is removed next. Their volumes go with the site's.
 */
export async function removeDatabases(engine: Engine, instanceId: string, slug: string): Promise<void> {
  const left = await engine.docker.listContainers({ all: true, filters: siteFilter(instanceId, slug) })
  await Promise.all(left.map((c) => ignoring([404], engine.docker.getContainer(c.Id).remove({ force: true }))))
}

/** Waits until the node has no running (`runningOnly`) or no container at all of the site. */
export async function untilNoContainer(engine: Engine, instanceId: string, slug: string, runningOnly: boolean): Promise<void> {
  const filters = { label: taskFilter(instanceId, slug).label, ...(runningOnly ? { status: ['running', 'paused', 'restarting'] } : {}) }
  const deadline = Date.now() + GONE_WITHIN_MS
  while ((await engine.docker.listContainers({ all: !runningOnly, filters })).length > 0) {
    if (Date.now() > deadline) throw new Error(`Node ${engine.nodeId} still has the container of '${slug}' after ${GONE_WITHIN_MS / 1000} s.`)
    await Bun.sleep(POLL_MS)
  }
}

/** Removes the containers of the site's ended tasks on the node: they hold its volume. */
export async function removeEndedTasks(engine: Engine, instanceId: string, slug: string): Promise<void> {
  const ended = await engine.docker.listContainers({ all: true, filters: { label: taskFilter(instanceId, slug).label, status: ['exited', 'created', 'dead'] } })
  await Promise.all(ended.map((c) => engine.docker.getContainer(c.Id).remove().catch(() => {})))
}
