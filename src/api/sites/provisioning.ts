import type { Config } from '../../config/config'
import { HostPortTakenError, type ContainerRuntime, type SiteEndpoint, type SiteSpec } from '../../drivers/runtime/types'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { JobHandler } from '../../jobs/runner'
import type { SiteRow } from '../../store/schema'
import type { PlansService } from '../plans/service'
import type { SiteEndpoints } from './endpoints'
import type { SitesRepository } from './repository'

/** How long a new container may take to answer its first HTTP request. */
const FIRST_ANSWER_TIMEOUT_MS = 20_000

/** The runtime spec of a site: its plan's limits and the image of its hosting type. */
export function siteSpec(site: SiteRow, plans: PlansService, config: Config): SiteSpec {
  const plan = plans.get(site.planSlug)
  return {
    siteId: site.id,
    slug: site.slug,
    hostingType: plan.hosting_type,
    image: config.containers.images[plan.hosting_type],
    memoryMb: plan.features.memory_mb,
    cpuCores: plan.features.cpu_cores,
    pidsLimit: config.containers.pidsLimit,
    diskGb: plan.features.disk_gb,
    sshPort: plan.features.ssh ? site.sshPort : null,
  }
}

/**
 * The provisioning job: runs the site's container and marks the site active once its web server
 * answers. Idempotent (ensureSite reuses what exists), so a crash mid-way is repaired by running
 * it again. When the last attempt fails, `onFailed` refunds the buyer.
 */
export class Provisioner implements JobHandler {
  attempts = 3

  constructor(
    private repo: SitesRepository,
    private plans: PlansService,
    private runtime: ContainerRuntime,
    private endpoints: SiteEndpoints,
    private config: Config,
    private clock: Clock,
    private log: Logger,
    private onFailed: (site: SiteRow, error: string) => Promise<void>,
  ) {}

  async run(siteId: string): Promise<void> {
    const site = this.repo.find(siteId)
    if (!site || site.status !== 'provisioning') return
    const started = this.clock.now()
    const endpoint = await this.runtime.ensureSite(siteSpec(site, this.plans, this.config)).catch((err) => {
      // Another port now, then the job's retry uses it.
      if (err instanceof HostPortTakenError) this.repo.replaceSshPort(site.id, err.port)
      throw err
    })
    await waitForAnswer(endpoint)
    this.endpoints.set(site.slug, endpoint)
    this.repo.setStatus(site.id, 'active', this.clock.now())
    this.log.info('site provisioned', { site: site.slug, ms: this.clock.now() - started })
  }

  async failed(siteId: string, error: string): Promise<void> {
    const site = this.repo.find(siteId)
    if (!site) return
    this.repo.setStatus(site.id, 'failed', this.clock.now(), `Provisioning failed: ${error}`)
    await this.runtime.removeSite(site.slug, { volume: true }).catch(() => {})
    await this.onFailed(site, error)
  }
}

/** Polls the container's web server until it answers anything, every 5 ms. */
export async function waitForAnswer(endpoint: SiteEndpoint, timeoutMs = FIRST_ANSWER_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let lastError = ''
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`http://${endpoint.address}:${endpoint.port}/`, { signal: AbortSignal.timeout(1000) })
      await res.arrayBuffer()
      return
    } catch (err) {
      lastError = (err as Error).message
      await Bun.sleep(5)
    }
  }
  throw new Error(`the site's web server did not answer within ${timeoutMs / 1000} s (${lastError})`)
}
