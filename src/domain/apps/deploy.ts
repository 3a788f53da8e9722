import type { ContainerRuntime } from '../../drivers/runtime/types'
import type { Logger } from '../../lib/logger'
import type { DeploymentRow, SiteRow } from '../../store/schema'
import { planBuild, STATIC_OUTPUTS, TreeRefusedError, type BuildPlan } from './detect'
import type { AppEnv, AppSites, AppSources, AppSupervisor, DeploySource } from './ports'
import {
  adoptScript, existsScript, extractArgv, factsScript, HOME, KEPT_RELEASES, linksOutScript, parseFacts, persistentScript, prepareScript,
  pruneScript, releaseDir, releaseJson, sq, staticOutputScript, writeManifestScript,
} from './release'

/** A tree with a .gitmodules, refused: Berth never fetches submodules. */
export const SUBMODULES_REFUSED = "The repository has submodules (.gitmodules), which Berth never fetches (they would reach repositories nobody checked): vendor their files into the repository, or deploy an archive of the whole tree."

/** A fetched or pushed tree with symbolic links leaving it (`path -> target` each), refused as an archive's are. */
export const linksOutRefused = (links: string[]) =>
  `The tree holds symbolic links that leave the tree (${links.join(', ')}): Berth deploys no link to files outside the release. Make them relative links inside the tree, or commit the files themselves, then deploy again.`

/** Where the supervisor keeps the settings it was given (tmpfs, 0600; the contract of issue 39). */
const ENV_FILE = '/tmp/berth/env.json'

/** Whether `json` (the supervisor's env.json) holds exactly `want`. */
function sameEnv(json: string, want: Record<string, string>): boolean {
  try {
    const held = JSON.parse(json) as unknown
    if (typeof held !== 'object' || held === null || Array.isArray(held)) return false
    const names = Object.keys(held)
    return names.length === Object.keys(want).length && names.every((n) => (held as Record<string, unknown>)[n] === want[n])
  } catch {
    return false
  }
}

/** Output kept of each step of a build. */
export const APP_STEP_OUTPUT_BYTES = 64 * 1024
const SHORT_MS = 60_000

export interface AppOutcome {
  status: 'succeeded' | 'failed'
  output: string
  error: string | null
}

export interface AppDeployerDeps {
  runtime: Pick<ContainerRuntime, 'runCommand'>
  supervisor: AppSupervisor
  env: AppEnv
  sources: AppSources
  sites: AppSites
  log: Logger
  /** apps.build_timeout_seconds: each of install, build and release is killed past it. */
  buildTimeoutS: number
  /** apps.health_timeout_seconds: how long a new release's web process has to answer. */
  healthTimeoutS: number
  /** Whether a deployment's release is among those kept (KEPT_RELEASES newest succeeded), for pruning. */
  keptReleases(siteId: string): string[]
}

/**
 * The part of a deployment that builds a source into a release and switches to it (issue 39,
 * docs/architecture.md "Apps"): the site moved to the app image the first time, the tree
 * received into `~/app/releases/{id}`, detected (detect.ts), its persistent folders linked, built
 * with the site's variables and limits, and switched to by the supervisor only once its web
 * process answers. Any failure leaves the live release serving; the failed release is removed.
 */
export class AppDeployer {
  constructor(private d: AppDeployerDeps) {}

  /**
   * Builds and switches; `record` stores the outcome before a pusher is told it (git push's
   * answer), so what the pusher reads next through the API already says it.
   */
  async deploy(deployment: DeploymentRow, site: SiteRow, source: DeploySource, record?: (outcome: AppOutcome) => void): Promise<AppOutcome> {
    const relay = source.kind === 'push' ? new PushRelay(this.d.supervisor, site.slug, source.push_id) : null
    const outcome = await this.build(deployment, site, source, (line) => relay?.line(line)).catch(async (err) => {
      await relay?.done(false, 'Berth could not run the deployment (the container engine failed); push again in a minute.')
      throw err
    })
    record?.(outcome)
    await relay?.done(outcome.status === 'succeeded', outcome.status === 'succeeded' ? `Deployed: release ${deployment.id} serves the site.` : `Not deployed: ${outcome.error}`)
    return outcome
  }

  private async build(deployment: DeploymentRow, site: SiteRow, source: DeploySource, progress: (line: string) => void): Promise<AppOutcome> {
    const out = new Output(this.d.env, site.id, progress)
    const dir = releaseDir(deployment.id)
    try {
      if (site.runtime === null) {
        out.line('==> Moving the site to the app image (its container restarts once; public/ is served as before until a release is live)')
        site = await this.d.sites.useAppImage(site)
      }
      await this.ensureEnv(site)
      const env = this.buildEnv(site, deployment)
      const commit = await this.receive(site, deployment, source, dir, env, out)
      // An archive's links were checked on the host; a repository's tree comes as git made it.
      const linksOut = source.kind === 'archive' ? '' : (await this.sh(site, HOME, linksOutScript(dir), {}, SHORT_MS)).text.trim()
      if (linksOut) throw new StepFailed(linksOutRefused(linksOut.split('\n')))
      const facts = parseFacts((await this.sh(site, HOME, factsScript(dir), env, SHORT_MS)).text)
      const plan = planBuild(facts)
      out.line(`==> Detected ${plan.runtime} (${plan.because})${describe(plan)}`)
      if (plan.persistent.length > 0) await this.step(site, dir, 'Linking persistent folders', persistentScript(dir, plan.persistent), env, SHORT_MS, out)
      for (const [what, cmd] of [['install', plan.install], ['build', plan.build], ['release', plan.release]] as const) {
        if (cmd) await this.step(site, dir, `Running the ${what} command: ${cmd}`, cmd, env, this.d.buildTimeoutS * 1000, out)
      }
      const staticRoot = plan.runtime === 'static' && plan.staticRoot === null ? await this.staticOutput(site, dir, env) : plan.staticRoot
      await this.step(site, dir, null, writeManifestScript(dir), env, SHORT_MS, out, releaseJson(deployment.id, plan, staticRoot))
      out.line(plan.processes.web ? `==> Starting the release: web (${plan.processes.web}) must answer on $PORT within ${this.d.healthTimeoutS} s` : `==> Switching to the release (${plan.runtime}, serving ${staticRoot})`)
      const switched = await this.d.supervisor.switchRelease(site.slug, dir, this.d.healthTimeoutS)
      if (!switched.ok) {
        if (switched.output) out.block(switched.output)
        throw new StepFailed(`The new release did not start: ${switched.error ?? 'the supervisor refused it'}. The previous release keeps serving.`)
      }
      out.line(`==> Live: release ${deployment.id} (${plan.runtime}) serves the site; switched in ${switched.ms ?? '?'} ms`)
      this.d.sites.setLive(site.id, deployment.id, plan.runtime, commit)
      await this.prune(site, deployment.id)
      return { status: 'succeeded', output: out.text(), error: null }
    } catch (err) {
      await this.sh(site, HOME, `rm -rf '${dir}'`, {}, SHORT_MS).catch(() => {})
      if (err instanceof StepFailed || err instanceof TreeRefusedError) return { status: 'failed', output: out.text(), error: this.d.env.redact(site.id, err.message) }
      throw err
    } finally {
      if (source.kind === 'archive') await this.d.sources.dropArchive(deployment.id).catch(() => {})
    }
  }

  /** A rollback of an app site: the kept release of `target` switched back in, nothing built. */
  async rollback(deployment: DeploymentRow, site: SiteRow, target: DeploymentRow): Promise<AppOutcome> {
    const out = new Output(this.d.env, site.id)
    const dir = releaseDir(target.id)
    const kept = await this.d.runtime.runCommand(site.slug, { argv: ['sh', '-c', existsScript(dir)], cwd: HOME, env: {}, timeoutMs: SHORT_MS, keepBytes: 4096 })
    if (kept.exitCode !== 0) return { status: 'failed', output: '', error: `The release of deployment ${target.id} is no longer kept (the newest ${KEPT_RELEASES} are); deploy it again instead.` }
    out.line(`==> Switching back to the release of deployment ${target.id}`)
    await this.ensureEnv(site)
    const switched = await this.d.supervisor.switchRelease(site.slug, dir, this.d.healthTimeoutS)
    if (!switched.ok) {
      if (switched.output) out.block(switched.output)
      return { status: 'failed', output: out.text(), error: this.d.env.redact(site.id, `That release did not start again: ${switched.error ?? 'refused'}. The current release keeps serving.`) }
    }
    out.line(`==> Live: release ${target.id} serves the site; switched in ${switched.ms ?? '?'} ms`)
    this.d.sites.setLive(site.id, target.id, target.runtime ?? 'static', target.commit)
    return { status: 'succeeded', output: out.text(), error: null }
  }

  /**
   * After a restart of Berth cut a deployment short: its build's processes (marked with the
   * deployment's id) are killed and its unfinished release removed; the live release never
   * stopped serving.
   */
  async abandon(deployment: DeploymentRow, site: SiteRow): Promise<void> {
    const script = `for e in /proc/[0-9]*/environ; do if tr '\\0' '\\n' < "$e" 2>/dev/null | grep -qxF "BERTH_DEPLOYMENT=${deployment.id}"; then p=\${e#/proc/}; kill -s KILL "\${p%/environ}" 2>/dev/null; fi; done; rm -rf '${releaseDir(deployment.id)}'; exit 0`
    await this.sh(site, HOME, script, {}, SHORT_MS)
    const source = deployment.source ? (JSON.parse(deployment.source) as DeploySource) : null
    if (source?.kind === 'push') await this.d.supervisor.pushDone?.(site.slug, source.push_id, false, 'Not deployed: Berth restarted while this push was building; push again.').catch(() => {})
  }

  private buildEnv(site: SiteRow, deployment: DeploymentRow): Record<string, string> {
    return { ...this.d.env.valuesOf(site.id), BERTH_DEPLOYMENT: deployment.id, CI: '1' }
  }

  /** Puts the tree into the release folder; the commit it is, for git and push sources. */
  private async receive(site: SiteRow, deployment: DeploymentRow, source: DeploySource, dir: string, env: Record<string, string>, out: Output): Promise<string | null> {
    if (source.kind === 'push') {
      out.line(`==> Taking the pushed tree of ${source.ref} at ${source.commit.slice(0, 12)}`)
      await this.step(site, HOME, null, adoptScript(source.dir, dir), env, SHORT_MS, out)
      return source.commit
    }
    await this.step(site, HOME, null, prepareScript(dir), env, SHORT_MS, out)
    if (source.kind === 'archive') {
      const tar = this.d.sources.archiveOf(deployment.id)
      if (!tar) throw new StepFailed('The uploaded archive is gone (the service restarted before it was unpacked); deploy it again.')
      out.line(`==> Unpacking the archive${source.files !== undefined ? ` (${source.files} files, ${source.bytes} bytes)` : ''}`)
      const r = await this.d.runtime.runCommand(site.slug, { argv: extractArgv(dir), cwd: HOME, env: {}, stdin: tar, timeoutMs: this.d.buildTimeoutS * 1000, keepBytes: APP_STEP_OUTPUT_BYTES })
      if (r.exitCode !== 0) {
        out.block(text(r.stderr) + text(r.stdout))
        throw new StepFailed(`Unpacking the archive into the release failed (exit code ${r.exitCode}); the site's disk may be full: see output.`)
      }
      return null
    }
    const fetch = await this.d.sources.gitFetch(source, dir, this.d.env.valuesOf(site.id)).catch((err: Error) => { throw new StepFailed(err.message) })
    out.line(`==> Fetching ${source.url}${source.ref ? ` at ${source.ref}` : ' (its default branch)'}`)
    const files = fetch.files.map((f) => `printf '%s' ${sq(f.content)} > ${sq(f.path)} && chmod ${f.mode.toString(8)} ${sq(f.path)}`)
    await this.sh(site, HOME, [`umask 077`, `rm -rf ${sq(fetch.scratch)}`, `mkdir -p ${sq(fetch.scratch)}`, ...files].join(' && '), {}, SHORT_MS)
    try {
      const r = await this.d.runtime.runCommand(site.slug, { argv: fetch.argv, cwd: HOME, env: { ...env, ...fetch.env }, timeoutMs: fetch.timeoutMs, keepBytes: APP_STEP_OUTPUT_BYTES })
      const output = text(r.stdout) + text(r.stderr)
      out.block(output.split('\n').filter((l) => !l.startsWith('berth-git: ')).join('\n'))
      const result = fetch.read(r.exitCode, output)
      if ('error' in result) throw new StepFailed(result.error)
      if (result.submodules) throw new StepFailed(SUBMODULES_REFUSED)
      out.line(`==> Commit ${result.commit}`)
      return result.commit
    } finally {
      await this.sh(site, HOME, `rm -rf ${sq(fetch.scratch)}`, {}, SHORT_MS).catch(() => {})
    }
  }

  private async staticOutput(site: SiteRow, dir: string, env: Record<string, string>): Promise<string> {
    const r = await this.sh(site, dir, staticOutputScript(dir, STATIC_OUTPUTS), env, SHORT_MS).catch(() => null)
    const found = r?.text.trim()
    if (!found) throw new StepFailed(`The build wrote none of ${STATIC_OUTPUTS.join('/, ')}/ to serve; set "static_root" in berth.json to the folder it writes.`)
    return found
  }

  /** One shell step in the release (or the home), its output added; StepFailed when it fails. */
  private async step(site: SiteRow, cwd: string, title: string | null, script: string, env: Record<string, string>, timeoutMs: number, out: Output, stdin?: string): Promise<void> {
    if (title) out.line(`==> ${title}`)
    const started = performance.now()
    const r = await this.d.runtime.runCommand(site.slug, { argv: ['sh', '-c', `exec 2>&1\n${script}`], cwd, env, timeoutMs, keepBytes: APP_STEP_OUTPUT_BYTES, ...(stdin !== undefined ? { stdin: new TextEncoder().encode(stdin) } : {}) })
    out.block(text(r.stdout) + text(r.stderr), r.truncated)
    if (r.exitCode === 0) return
    const why = r.timedOut ? ` (stopped: it ran past ${Math.round(timeoutMs / 1000)} s)` : r.exitCode === 137 ? ' (killed: out of memory? The plan\'s memory limit holds for builds too)' : ''
    throw new StepFailed(`${title ? title.replace(/^Running the /, 'The ') : 'A step of the deployment'} failed with exit code ${r.exitCode}${why} after ${((performance.now() - started) / 1000).toFixed(1)} s; see output. The previous release keeps serving.`)
  }

  private async sh(site: SiteRow, cwd: string, script: string, env: Record<string, string>, timeoutMs: number): Promise<{ text: string }> {
    const r = await this.d.runtime.runCommand(site.slug, { argv: ['sh', '-c', script], cwd, env, timeoutMs, keepBytes: 256 * 1024 })
    if (r.exitCode !== 0) throw new StepFailed(`A step of the deployment failed (exit code ${r.exitCode}): ${text(r.stderr).slice(0, 500)}`)
    return { text: text(r.stdout) }
  }

  /**
   * The site's settings into the supervisor unless it holds exactly these already (pushed at each
   * change and after each start): a push restarts the live web process, which a deploy or a
   * rollback would then start again at its switch (a rollback took twice as long).
   */
  private async ensureEnv(site: SiteRow): Promise<void> {
    const want = this.d.env.valuesOf(site.id)
    const held = await this.d.runtime.runCommand(site.slug, { argv: ['cat', ENV_FILE], cwd: HOME, env: {}, timeoutMs: SHORT_MS, keepBytes: 1 << 20 }).catch(() => null)
    if (held?.exitCode === 0 && !held.truncated && sameEnv(text(held.stdout), want)) return
    await this.d.supervisor.pushEnv(site.slug, want)
  }

  private async prune(site: SiteRow, live: string): Promise<void> {
    const keep = [...new Set([live, ...this.d.keptReleases(site.id)])]
    await this.sh(site, HOME, pruneScript(keep), {}, SHORT_MS).catch((err) => this.d.log.warn('could not prune old releases', { site: site.slug, error: (err as Error).message }))
  }
}

/**
 * A push's progress on its way to the pusher: lines gathered and handed to the supervisor a few
 * times a second (each hand-over is an exec), then the result, which ends the hook's wait.
 */
class PushRelay {
  private pending: string[] = []
  private timer: ReturnType<typeof setTimeout> | null = null
  private flushing: Promise<void> = Promise.resolve()

  constructor(private supervisor: AppSupervisor, private slug: string, private id: string) {}

  line(s: string): void {
    this.pending.push(s)
    this.timer ??= setTimeout(() => this.flush(), 250)
  }

  async done(ok: boolean, message: string): Promise<void> {
    this.flush()
    await this.flushing
    await this.supervisor.pushDone?.(this.slug, this.id, ok, message).catch(() => {})
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    if (this.pending.length === 0) return
    const text = `${this.pending.join('\n')}\n`
    this.pending = []
    this.flushing = this.flushing.then(() => this.supervisor.pushLog?.(this.slug, this.id, text)).catch(() => {})
  }
}

/** A step failed for a reason of the tree or the build: the deployment fails with it. */
class StepFailed extends Error {}

const decoder = new TextDecoder()
const text = (b: Uint8Array) => decoder.decode(b)

function describe(plan: BuildPlan): string {
  const parts = [
    plan.install && `install: ${plan.install}`,
    plan.build && `build: ${plan.build}`,
    ...Object.entries(plan.processes).map(([n, c]) => `${n}: ${c}`),
  ].filter(Boolean)
  return parts.length > 0 ? `; ${parts.join('; ')}` : ''
}

/** The deployment's output as it grows, each piece redacted of the site's secrets before it is kept. */
class Output {
  private lines: string[] = []
  constructor(private env: AppEnv, private siteId: string, private live?: (line: string) => void) {}

  line(s: string): void {
    const safe = this.env.redact(this.siteId, s)
    this.lines.push(safe)
    this.live?.(safe)
  }

  block(s: string, truncated = false): void {
    const body = s.replace(/\n$/, '')
    if (body === '') return
    if (truncated) this.line(`[... the beginning was dropped: the last ${APP_STEP_OUTPUT_BYTES / 1024} KiB are kept]`)
    for (const l of body.split('\n')) this.line(l)
  }

  text(): string {
    return this.lines.join('\n')
  }
}
