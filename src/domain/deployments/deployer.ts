import type { HostingType } from '../../core/enums'
import { KeyedLock } from '../../lib/keyed-lock'
import { SiteNotRunnableError, type ContainerRuntime } from '../../drivers/runtime/types'
import type { JobHandler } from '../../jobs/runner'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { PlansService } from '../plans'
import type { DeploymentsRepository } from './repository'
import { hookOutOfSpace, type SiteChanges, type SiteRecords } from '../sites'
import type { DeploymentRow, SiteRow } from '../../store/schema'
import { RollbackRefusedError, type DeploymentFiles } from './files'
import type { AppDeployer, AppEnv, AppSupervisor, DeploySource } from '../apps'

/** The site's own deploy hook, relative to its home (the files API root). */
export const DEPLOY_HOOK = 'deploy.sh'
export const HOOK_TIMEOUT_MS = 300_000
/** Output kept of each step (the reload, the hook). */
export const STEP_OUTPUT_BYTES = 64 * 1024
const RELOAD_TIMEOUT_MS = 30_000

/**
 * How each image's web server picks up new files and configuration, run in the container as the
 * site user. nginx and PHP-FPM run as that user too (image-php.ts), so it may signal them:
 * `nginx -s reload` sends SIGHUP to the master named in /tmp/nginx.pid (new workers, old ones
 * finish their requests); SIGUSR2 makes the PHP-FPM master re-exec itself in place (same pid,
 * inherited socket: no request meets a closed socket) with fresh workers and an empty opcache.
 * busybox httpd (static image) reads every file per request: nothing to reload.
 */
const RELOAD: Record<HostingType, { what: string; script: string | null }> = {
  shared: { what: 'Static web server: files are read on each request, nothing to reload.', script: null },
  vps: { what: 'Reloading nginx and PHP-FPM', script: phpReload() },
  dedicated: { what: 'Reloading nginx and PHP-FPM', script: phpReload() },
}

/**
 * Whether a rollback restarts the container after the swap, because the web server keeps the
 * folders it replaced: busybox httpd changes into `public/` when it starts and serves from its
 * working folder, which the swap moved aside (it would answer 404 for every page). nginx and
 * PHP-FPM open files by path, and the reload gives them fresh workers.
 */
const RESTART_AFTER_SWAP: Record<HostingType, boolean> = { shared: true, vps: false, dedicated: false }

function phpReload(): string {
  return [
    'set -e',
    'nginx -c /etc/berth/nginx.conf -s reload 2>&1',
    'echo "nginx: reloaded"',
    'kill -USR2 "$(cat /tmp/php-fpm.pid)"',
    'echo "php-fpm: reloaded"',
  ].join('\n')
}

/**
 * Runs ./deploy.sh from the home: directly when executable (its #! line picks the interpreter),
 * else with sh, since the files API writes files without the executable bit.
 */
const RUN_HOOK = `if [ -x ./${DEPLOY_HOOK} ]; then exec ./${DEPLOY_HOOK}; else exec sh ./${DEPLOY_HOOK}; fi`

interface Outcome {
  status: 'succeeded' | 'failed'
  output: string
  error: string | null
}

/**
 * The deploy job (subject: a deployment id). Deployments of one site run one at a time, in order.
 * Not retried: a hook may not be safe to run twice. A deployment found `running` when its job
 * starts was cut short by a stop of Berth; it is marked failed rather than run again.
 *
 * With `files` (./files.ts), a deploy first records the home's files (what a rollback puts back);
 * a rollback (`rollback_of` set) first puts back the files its archive holds. Then both reload
 * and run the hook alike, and the site's oldest deployments' files are pruned.
 */
export class Deployer implements JobHandler {
  attempts = 1
  private locks = new KeyedLock()

  constructor(
    private repo: DeploymentsRepository,
    private sites: Pick<SiteRecords, 'find'>,
    private plans: PlansService,
    private runtime: ContainerRuntime,
    private clock: Clock,
    private log: Logger,
    /** Whether `name` is in the folder `dir`, itself not followed if a symlink (drivers/files/entry.ts). */
    private entryExists: (dir: string, name: string) => Promise<boolean>,
    private changes?: Pick<SiteChanges, 'changed'>,
    private files?: Pick<DeploymentFiles, 'recording' | 'record' | 'putBack' | 'restartSite' | 'settle' | 'prune'>,
    /** Apps (issue 39): deployments with a source, rollbacks to a release, and the app's restart on a plain deploy. */
    private apps?: { deployer: AppDeployer; supervisor: AppSupervisor; env: AppEnv },
  ) {}

  async run(deploymentId: string): Promise<void> {
    const deployment = this.repo.find(deploymentId)
    const site = deployment && this.sites.find(deployment.siteId)
    if (!deployment || !site) return
    if (deployment.status === 'running') {
      if (deployment.rollbackOf && deployment.archiveId) this.files?.settle(deployment.archiveId)
      if (deployment.source && this.apps) await this.apps.deployer.abandon(deployment, site).catch((err) => this.log.warn('could not clear a deployment cut short', { site: site.slug, deployment: deploymentId, error: (err as Error).message }))
      const again = deployment.rollbackOf ? 'roll back again' : 'deploy the site again'
      this.repo.finish(deploymentId, { status: 'failed', output: deployment.output, error: `The service restarted while this deployment ran; ${again}.`, at: this.clock.now() })
      return
    }
    if (deployment.status !== 'queued') return
    await this.locks.run(site.id, async () => {
      this.repo.start(deploymentId, this.clock.now())
      // Stored as soon as it is known: a push's pusher is told only after (AppDeployer.deploy).
      let recorded = false
      const record = (done: Outcome) => {
        this.repo.finish(deploymentId, { ...done, at: this.clock.now() })
        recorded = true
      }
      const outcome = await this.deploy(deployment, site, this.plans.get(site.planSlug).hosting_type, record).catch((err): Outcome => {
        if (err instanceof SiteNotRunnableError) return { status: 'failed', output: '', error: `${err.message} Deploy again once the site shows status active.` }
        if (err instanceof RollbackRefusedError) return { status: 'failed', output: '', error: err.message }
        this.log.error('deployment failed', { site: site.slug, deployment: deploymentId, error: (err as Error).message })
        return { status: 'failed', output: '', error: 'The deployment could not run (the container engine failed); retry in a minute.' }
      })
      if (!recorded) this.repo.finish(deploymentId, { ...outcome, at: this.clock.now() })
      this.changes?.changed({ siteId: site.id, slug: site.slug, reason: 'deploy' })
      this.log.info('site deployed', { site: site.slug, deployment: deploymentId, status: outcome.status, rollback_of: deployment.rollbackOf ?? undefined })
      await this.files?.prune(site.id).catch((err) => this.log.error('could not prune the files of old deployments', { site: site.slug, error: (err as Error).message }))
    })
  }

  async failed(deploymentId: string, error: string): Promise<void> {
    const deployment = this.repo.find(deploymentId)
    if (deployment && (deployment.status === 'queued' || deployment.status === 'running')) {
      this.repo.finish(deploymentId, { status: 'failed', output: deployment.output, error: `The deployment could not run: ${error}`, at: this.clock.now() })
    }
  }

  private async deploy(deployment: DeploymentRow, site: SiteRow, hostingType: HostingType, record: (outcome: Outcome) => void): Promise<Outcome> {
    const slug = site.slug
    const out: string[] = []
    const state = await this.runtime.inspectSite(slug)
    if (!state?.running) throw new SiteNotRunnableError(`The site '${slug}' is not running.`)
    if (this.apps && deployment.source) return this.apps.deployer.deploy(deployment, site, JSON.parse(deployment.source) as DeploySource, record)
    const target = deployment.rollbackOf ? this.repo.find(deployment.rollbackOf) : undefined
    if (this.apps && target?.source && target.runtime) return this.apps.deployer.rollback(deployment, site, target)
    if (this.apps && site.runtime !== null) return this.appRestart(site)
    if (deployment.rollbackOf) out.push(...(await this.putBack(deployment, site, hostingType)))
    else out.push(...(await this.record(deployment, site)))
    const reload = RELOAD[hostingType]
    out.push(`==> ${reload.what}`)
    if (reload.script) {
      const result = await this.runtime.exec(slug, ['sh', '-c', reload.script], { timeoutMs: RELOAD_TIMEOUT_MS, maxOutputBytes: STEP_OUTPUT_BYTES })
      out.push(...capped(result.output))
      if (result.exitCode !== 0) {
        return { status: 'failed', output: out.join('\n'), error: `Reloading the web server failed (exit code ${result.exitCode}); see output. The site keeps serving with its previous configuration.` }
      }
    }
    if (!(await this.hasHook(slug))) {
      out.push(`==> No ~/${DEPLOY_HOOK}: nothing else to run.`)
      return { status: 'succeeded', output: out.join('\n'), error: null }
    }
    out.push(`==> Running ~/${DEPLOY_HOOK}`)
    const started = this.clock.now()
    const hook = await this.runHook(site)
    out.push(...capped(hook.output))
    out.push(`==> ~/${DEPLOY_HOOK} exited with code ${hook.exitCode} after ${((this.clock.now() - started) / 1000).toFixed(1)} s`)
    if (hook.exitCode === 0) return { status: 'succeeded', output: out.join('\n'), error: null }
    const why = hook.exitCode === 137 ? ` (killed: it ran past ${HOOK_TIMEOUT_MS / 1000} s or out of memory)` : ''
    // A full disk (its plan's disk_gb) is said with its figures: the likely cause of a failed write.
    const full = hookOutOfSpace(slug, await this.runtime.siteDisk(slug).catch(() => null))
    return { status: 'failed', output: out.join('\n'), error: `~/${DEPLOY_HOOK} exited with code ${hook.exitCode}${why}; ${full ?? 'see output.'}` }
  }

  /**
   * Runs ~/deploy.sh with the site's settings and secrets in its environment (issue 39), its
   * output masked of the secrets; without the apps area (tests of the plain deploy), as before.
   */
  private async runHook(site: SiteRow): Promise<{ exitCode: number; output: string }> {
    const env = this.apps?.env.valuesOf(site.id)
    const hook = await this.runtime.exec(site.slug, ['sh', '-c', RUN_HOOK], { timeoutMs: HOOK_TIMEOUT_MS, maxOutputBytes: STEP_OUTPUT_BYTES, ...(env ? { env } : {}) })
    return this.apps ? { exitCode: hook.exitCode, output: this.apps.env.redact(site.id, hook.output) } : hook
  }

  /**
   * A deploy without a source of an app site (spec part 4's meaning: pick up what changed): its
   * processes restarted without dropping a request, then ~/deploy.sh with the site's variables.
   */
  private async appRestart(site: SiteRow): Promise<Outcome> {
    const apps = this.apps!
    const out = ['==> Restarting the app\'s processes (a new web process answers before the old one stops)']
    await apps.supervisor.pushEnv(site.slug, apps.env.valuesOf(site.id))
    if (!(await this.hasHook(site.slug))) {
      out.push(`==> No ~/${DEPLOY_HOOK}: nothing else to run.`)
      return { status: 'succeeded', output: out.join('\n'), error: null }
    }
    out.push(`==> Running ~/${DEPLOY_HOOK}`)
    const hook = await this.runHook(site)
    out.push(...capped(hook.output))
    if (hook.exitCode === 0) return { status: 'succeeded', output: out.join('\n'), error: null }
    return { status: 'failed', output: out.join('\n'), error: `~/${DEPLOY_HOOK} exited with code ${hook.exitCode}; see output.` }
  }

  /** A rollback's first step: the files of the deployment it rolls back to, put back. */
  private async putBack(deployment: DeploymentRow, site: SiteRow, hostingType: HostingType): Promise<string[]> {
    if (!deployment.archiveId || !this.files) throw new RollbackRefusedError('The files of that deployment are no longer kept; roll back to a newer deployment.')
    const { frozenMs } = await this.files.putBack(site, deployment.archiveId)
    const out = [`==> Put back the files of deployment ${deployment.rollbackOf} (all of the home but logs/ and .ssh/)`]
    let restartMs: number | undefined
    if (RESTART_AFTER_SWAP[hostingType]) {
      const started = performance.now()
      await this.files.restartSite(site)
      restartMs = Math.round(performance.now() - started)
      out.push('==> Restarted the static web server, which serves from the folder it started in')
    }
    this.log.info('deployment files put back', { site: site.slug, deployment: deployment.id, rollback_of: deployment.rollbackOf, frozen_ms: frozenMs, restart_ms: restartMs })
    return out
  }

  /**
   * A deploy's first step: the home's files recorded, so that a rollback can put them back. A
   * record that fails does not stop the deploy; the output says this one cannot be rolled back to.
   */
  private async record(deployment: DeploymentRow, site: SiteRow): Promise<string[]> {
    if (!this.files?.recording) return []
    try {
      const r = await this.files.record(site, deployment.id)
      this.log.info('deployment files recorded', { site: site.slug, deployment: deployment.id, archive: r.archiveId, files: r.files, bytes: r.bytes, stored_bytes: r.storedBytes, frozen_ms: r.frozenMs, ms: r.ms })
      return [`==> Recorded the files for a rollback: ${r.files} files, ${r.bytes} bytes (${r.storedBytes} stored)`]
    } catch (err) {
      this.log.error('could not record the files of a deployment', { site: site.slug, deployment: deployment.id, error: (err as Error).message })
      return ['==> Could not record the files (this deployment cannot be rolled back to); deploying anyway.']
    }
  }

  /**
   * Whether the home holds a deploy hook, looked at from the host without following a symlink
   * (one that the tenant planted there is run inside the container, where it points only at the
   * container's own files).
   */
  private async hasHook(slug: string): Promise<boolean> {
    const home = await this.runtime.homePath(slug)
    return this.entryExists(home, DEPLOY_HOOK)
  }
}

/** Output lines of one step, with a note when exec dropped the rest. */
function capped(output: string): string[] {
  const lines = output.replace(/\n$/, '').split('\n').filter((l, i, all) => !(all.length === 1 && l === ''))
  if (Buffer.byteLength(output) >= STEP_OUTPUT_BYTES - 4) lines.push(`==> (output cut at ${STEP_OUTPUT_BYTES / 1024} KiB)`)
  return lines
}
