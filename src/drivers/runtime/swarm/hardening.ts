import { readFileSync } from 'node:fs'
import type Docker from 'dockerode'
import type { Logger } from '../../../lib/logger'
import { engineCall, openEngine } from '../engine'

/**
 * What a site's Swarm task gets of a site container's isolation on one box (site-container.ts),
 * by the engine's API version (docs/cluster.md "How sites run on Swarm", measured on Docker
 * 20.10, API 1.41):
 *
 * | one box                | a Swarm task                                                                 |
 * | ---------------------- | ---------------------------------------------------------------------------- |
 * | no-new-privileges      | `ContainerSpec.Privileges.NoNewPrivileges` from API 1.44 (Docker 25); before, only the daemon-wide `"no-new-privileges": true` |
 * | /tmp noexec            | every tmpfs mount of a service is `noexec,nosuid,nodev` (Docker's default)   |
 * | MemorySwap = Memory    | `Resources.SwapBytes: 0` from API 1.52 (Docker 29); before, the engine gives swap as large again as the memory, so Berth sets it on the node once the task's container runs (`withoutSwap`) |
 */

/** The manager's API version from which a service's spec carries `Privileges.NoNewPrivileges`. */
export const SERVICE_NO_NEW_PRIVILEGES_API = '1.44'
/** The manager's API version from which a service's spec carries `Resources.SwapBytes`. */
export const SERVICE_SWAP_API = '1.52'
/** From API 1.43 (Docker 24) `GET /info` lists `name=no-new-privileges` when the daemon sets it for every container. */
const INFO_LISTS_NO_NEW_PRIVILEGES_API = '1.43'
/** Where dockerd reads its settings by default. */
export const DAEMON_JSON = '/etc/docker/daemon.json'

/** True when API version `version` ("1.41") is `wanted` or later. */
export function apiAtLeast(version: string, wanted: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number)
  const [wMajor = 0, wMinor = 0] = wanted.split('.').map(Number)
  return major > wMajor || (major === wMajor && minor >= wMinor)
}

/**
 * Sets the task's container's MemorySwap to its Memory (no swap, as on one box) when the engine
 * gave it more: Swarm before API 1.52 has no swap setting, and the engine's default is swap as
 * large again as the memory limit. The container's processes run unbounded by it for the few
 * milliseconds between its start and this update. A failure (a kernel without swap accounting)
 * is logged, not thrown: the site runs all the same.
 */
export async function withoutSwap(docker: Docker, info: Docker.ContainerInspectInfo, log: Logger): Promise<Docker.ContainerInspectInfo> {
  const { Memory, MemorySwap } = info.HostConfig
  if (!Memory || MemorySwap === Memory || swapRefused.has(info.Id)) return info
  try {
    await docker.getContainer(info.Id).update({ MemorySwap: Memory })
    return { ...info, HostConfig: { ...info.HostConfig, MemorySwap: Memory } }
  } catch (err) {
    swapRefused.add(info.Id)
    log.warn('could not take the swap from a site task\'s container', { container: info.Id, error: (err as Error).message })
    return info
  }
}

/** Containers whose engine refused `withoutSwap`'s update: asked once, said once. */
const swapRefused = new Set<string>()

/** What `noNewPrivilegesAdvice` reads of one box's engine. */
export interface EngineSecurity {
  engineVersion: string
  apiVersion: string
  /** `GET /info` SecurityOptions (`name=seccomp,profile=default`, `name=no-new-privileges`...). */
  securityOptions: string[]
  /** The text of /etc/docker/daemon.json on the box, or null when there is none. */
  daemonJson: string | null
}

/**
 * The warning, with its fix, for a box whose engine would run site tasks without
 * no-new-privileges, or null when they get it. An engine of API 1.44 or later gets it from the
 * service's spec (provided the manager is as recent: its own start says so otherwise); an older
 * one only from the daemon-wide setting. API 1.43+ engines list that setting in `GET /info`;
 * older ones do not say, so /etc/docker/daemon.json is read (a `--no-new-privileges` flag on
 * dockerd's command line is not seen: the warning says how to check).
 */
export function noNewPrivilegesAdvice(engine: EngineSecurity, box: 'control plane' | 'node'): string | null {
  if (engine.securityOptions.some((o) => o === 'name=no-new-privileges' || o.startsWith('name=no-new-privileges,'))) return null
  if (apiAtLeast(engine.apiVersion, SERVICE_NO_NEW_PRIVILEGES_API)) return null
  if (!apiAtLeast(engine.apiVersion, INFO_LISTS_NO_NEW_PRIVILEGES_API) && daemonJsonSetsIt(engine.daemonJson)) return null
  const where = box === 'control plane' ? 'on this box and on every node' : 'on this box'
  const unsure = apiAtLeast(engine.apiVersion, INFO_LISTS_NO_NEW_PRIVILEGES_API) ? '' : ` (this engine does not report the setting: Berth found it in no ${DAEMON_JSON}; if dockerd runs with --no-new-privileges, ignore this)`
  return `the engine here (Docker ${engine.engineVersion}, API ${engine.apiVersion}) cannot give a Swarm service no-new-privileges (API ${SERVICE_NO_NEW_PRIVILEGES_API}, Docker 25, can): sites on it may gain privileges through set-uid programs${unsure}. Add "no-new-privileges": true to ${DAEMON_JSON} ${where}, then restart Docker (systemctl restart docker).`
}

/** True when daemon.json's text sets `"no-new-privileges": true`. */
function daemonJsonSetsIt(text: string | null): boolean {
  if (!text) return false
  try {
    return (JSON.parse(text) as Record<string, unknown>)['no-new-privileges'] === true
  } catch {
    return false
  }
}

/** Reads what `noNewPrivilegesAdvice` needs of the engine on `socket` (and of this box's daemon.json). */
export async function engineSecurity(socket: string, daemonJsonPath = DAEMON_JSON): Promise<EngineSecurity> {
  const docker = await openEngine(socket, 10_000)
  const [info, version] = await engineCall(socket, () => Promise.all([docker.info(), docker.version()]))
  let daemonJson: string | null = null
  try {
    daemonJson = readFileSync(daemonJsonPath, 'utf8')
  } catch {}
  return { engineVersion: String(version.Version ?? ''), apiVersion: String(version.ApiVersion ?? ''), securityOptions: (info.SecurityOptions ?? []) as string[], daemonJson }
}
