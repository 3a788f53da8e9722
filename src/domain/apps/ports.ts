import type { AppRuntime } from '../../core/enums'
import type { SiteRow } from '../../store/schema'

/**
 * What the apps area needs from the outside (issue 39), handed in by compose/sites.ts: the
 * supervisor in the app image (drivers/runtime/app-control.ts), the site's settings and secrets
 * (domain/env), the sources (drivers/sources) and the sites area's records.
 */

/** The supervisor's answer to a switch (berth-supervise switch). */
export interface SwitchOutcome {
  ok: boolean
  ms?: number
  /** The new live web's port in the container; null when the release has none. */
  port?: number | null
  error?: string
  exit_code?: number | null
  output?: string
}

export interface AppProcessState {
  name: string
  state: 'starting' | 'running' | 'backoff' | 'crashing' | 'stopped'
  pid: number | null
  restarts: number
  last_exit_code: number | null
  since: string | null
}

export interface AppStatusReport {
  release: string | null
  runtime: string | null
  env: boolean
  processes: AppProcessState[]
  /** The live web's port in the container, null without one (absent from an older image). */
  port?: number | null
}

/** The supervisor of an app site's container, reached through the engine's exec. */
export interface AppSupervisor {
  pushEnv(slug: string, env: Record<string, string>): Promise<unknown>
  switchRelease(slug: string, releaseDir: string, timeoutS: number): Promise<SwitchOutcome>
  status(slug: string): Promise<AppStatusReport | null>
  pushLog?(slug: string, id: string, text: string): Promise<void>
  pushDone?(slug: string, id: string, ok: boolean, message: string): Promise<void>
}

/** The site's variables as its app, build, hook and exec get them, and their redaction. */
export interface AppEnv {
  valuesOf(siteId: string): Record<string, string>
  /** `text` with every secret value of the site masked. */
  redact(siteId: string, text: string): string
}

/** Where a deployment's tree comes from, as stored in deployments.source. */
export type DeploySource =
  | { kind: 'archive'; format: 'gzip' | 'zip'; files?: number; bytes?: number }
  | { kind: 'git'; url: string; ref: string | null; token_secret?: string | null; ssh_key_secret?: string | null }
  | { kind: 'push'; ref: string; commit: string; dir: string; push_id: string }

/** A fetch of a git source inside the container: the command, its variables, the files it needs first, its time limit. */
export interface GitCommand {
  argv: string[]
  env: Record<string, string>
  /** Written first, 0600 (a deploy key, known_hosts, a CA), in `scratch`, removed after. */
  files: { path: string; content: string; mode: number }[]
  /** A private folder in the container's /tmp for those files. */
  scratch: string
  timeoutMs: number
  /** The fetch's answer from its exit code and output: the commit, or why it failed. */
  read(exitCode: number, output: string): { commit: string; submodules: boolean } | { error: string }
}

export interface AppSources {
  /** The checked tar the API received for a deployment (a work file on the host), or null when gone. */
  archiveOf(deploymentId: string): AsyncIterable<Uint8Array> | null
  /** Removes that work file (the deployment is over). */
  dropArchive(deploymentId: string): Promise<void>
  /**
   * The fetch of `source` into `dir` in the container, its host checked and pinned again now (a
   * name may resolve elsewhere than when the deployment was asked for). Throws a refusal saying why.
   */
  gitFetch(source: Extract<DeploySource, { kind: 'git' }>, dir: string, secrets: Record<string, string>): Promise<GitCommand>
}

/** The sites area's part: the store's record of an app site, and moving a site to the app image. */
export interface AppSites {
  find(siteId: string): SiteRow | undefined
  /** Sets the site's runtime (moving it to the app image the first time) and runs its container on it. */
  useAppImage(site: SiteRow): Promise<SiteRow>
  /** The release it now serves, built by `deploymentId` (its runtime, and the commit of a git source). */
  setLive(siteId: string, deploymentId: string, runtime: AppRuntime, commit: string | null): void
}
