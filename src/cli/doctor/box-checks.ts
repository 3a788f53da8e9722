import type { Config } from '../../config/config'
import type { BoxProbes, PortHolder } from '../../drivers/host/types'
import { thresholdOf } from '../../domain/room'
import { fail, GIB, pass, reasonOf, sizeText, warn, type CheckResult } from './check'

/**
 * The checks of the box itself: the data folder and its disk, the Docker engine and the site
 * images, the listeners' ports and the systemd unit. Each is one function of the config and the
 * probes (drivers/host/types.ts), so its judgement is tested on any state of a box.
 */

/** Under the reserve times this the disk WARNs: a few backups away from the reserve. */
export const DISK_WARN_FACTOR = 2

/**
 * The oldest engine API Berth runs on: Docker 20.10 (API 1.41), the first engine that runs
 * containers under cgroup v2, which Debian 11 and later boot with; the sites' memory, CPU and
 * pids limits are cgroup limits. Debian 12's docker.io package is 20.10.
 */
export const MIN_ENGINE_API = '1.41'
export const MIN_ENGINE_NAME = 'Docker 20.10'

/** The data folder takes a write (create, fsync, remove); a missing one WARNs when its parent could hold it. */
export async function checkDataFolder(config: Config, probes: BoxProbes): Promise<CheckResult> {
  const name = 'data_dir'
  const dir = config.server.dataDir
  const at = probes.existingAncestor(dir)
  try {
    await probes.writeProbe(at)
  } catch (err) {
    const reason = reasonOf(err)
    const why = reason === 'EROFS' ? 'the filesystem is mounted read-only' : reason === 'ENOSPC' ? 'the disk is full' : reason
    return fail(name, `${at} cannot be written (${why})`, `make ${at} writable by root (remount read-write, free space), or set server.data_dir to a folder that is`)
  }
  if (at !== dir) return warn(name, `${dir} does not exist yet; ${at} is writable, so berth serve can make it`, `berth install makes it (or mkdir -p ${dir})`)
  return pass(name, `${dir} is writable`)
}

/**
 * Free space on the data folder's disk, for an unprivileged writer, against the reserve Berth keeps
 * for itself (disk.reserve_bytes, disk.reserve_percent): under it FAIL (berth serve refuses new
 * sites, snapshots and backups with 507), under twice it WARN. `sitesDiskGb` is the sum of the
 * plans' disk_gb of the sites in the store (null: no store yet), shown against the disk's size.
 */
export function checkDisk(config: Config, probes: BoxProbes, sitesDiskGb: number | null = null): CheckResult {
  const name = 'disk'
  const dir = probes.existingAncestor(config.server.dataDir)
  const { freeBytes, totalBytes } = probes.diskSpace(dir)
  const percent = totalBytes > 0 ? (freeBytes / totalBytes) * 100 : 0
  const reserve = thresholdOf(config.disk, totalBytes)
  const promised = sitesDiskGb === null ? '' : `; the sites' plans hold ${sitesDiskGb} GiB (disk_gb), ${totalBytes > 0 ? ((sitesDiskGb * GIB * 100) / totalBytes).toFixed(0) : '-'} % of the disk`
  const detail = `${sizeText(freeBytes)} free of ${sizeText(totalBytes)} (${percent.toFixed(0)} %) on the disk of ${dir}${promised}`
  const fix = `free space on that disk (old backups: archives.backups_kept; docker image prune) or give it more; the reserve is disk.reserve_bytes and disk.reserve_percent`
  if (freeBytes < reserve) return fail(name, `${detail}: under the reserve of ${sizeText(reserve)}, so berth serve refuses new sites, snapshots and backups (507)`, fix)
  if (freeBytes < reserve * DISK_WARN_FACTOR) return warn(name, `${detail}: under ${DISK_WARN_FACTOR} times the reserve of ${sizeText(reserve)}`, fix)
  return pass(name, `${detail}; the reserve is ${sizeText(reserve)}`)
}

/** The host's commands the sites' disks are made with (drivers/runtime/disk-script.ts), in the engine's mount namespace. */
export const DISK_COMMANDS = ['mkfs.ext4', 'e2fsck', 'resize2fs', 'dumpe2fs', 'debugfs', 'losetup', 'mount', 'umount', 'mountpoint', 'findmnt', 'chattr', 'truncate', 'df']

/**
 * Each site's disk is an ext4 image loop-mounted by the engine's side with the host's tools: they
 * and the loop devices are there (a FAIL: no new site starts).
 */
export function checkSiteDisks(probes: BoxProbes): CheckResult {
  const name = 'site_disks'
  const missing = probes.missingCommands(DISK_COMMANDS)
  if (missing.length > 0) return fail(name, `the host has no ${missing.join(', ')}: each site's disk (its plan's disk_gb, an ext4 image) is made with them, so no new site can start`, 'apt install e2fsprogs util-linux coreutils')
  if (!probes.loopDevices()) return fail(name, "the kernel hands out no loop devices (/dev/loop-control): each site's disk is mounted through one, so no new site can start", 'modprobe loop (and add loop to /etc/modules)')
  return pass(name, "the host has the tools and the loop devices each site's disk is made with")
}

/** The engine answers on containers.docker_socket, at MIN_ENGINE_API or later. */
export async function checkEngine(config: Config, probes: BoxProbes): Promise<CheckResult> {
  const name = 'engine'
  const socket = config.containers.dockerSocket
  let found
  try {
    found = await probes.engineVersion()
  } catch (err) {
    return fail(name, `no Docker engine answers at ${socket}: ${reasonOf(err)}`, `start it (systemctl start docker), or set containers.docker_socket to its socket`)
  }
  if (compareVersions(found.apiVersion, MIN_ENGINE_API) < 0) {
    return fail(name, `Docker ${found.version} (API ${found.apiVersion}) at ${socket} is older than ${MIN_ENGINE_NAME} (API ${MIN_ENGINE_API}), the first to run containers under cgroup v2, which the sites' limits need`,
      `upgrade the engine to ${MIN_ENGINE_NAME} or later (apt-get install docker.io on Debian 12)`)
  }
  return pass(name, `Docker ${found.version} (API ${found.apiVersion}) answers at ${socket}; ${MIN_ENGINE_NAME} or later is needed`)
}

/** `1.41` against `1.9`: numerically, part by part. */
export function compareVersions(a: string, b: string): number {
  const [pa, pb] = [a.split('.').map(Number), b.split('.').map(Number)]
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0)
    if (d !== 0) return d
  }
  return 0
}

/** Every containers.image_* is on the engine. */
export async function checkImages(config: Config, probes: BoxProbes): Promise<CheckResult> {
  const name = 'images'
  // The app image too (containers.image_app): without it no site can deploy a source; and the
  // databases' (containers.image_postgres/_mariadb/_redis): without one, no database of that engine.
  const images = [...new Set([...Object.values(config.containers.images), config.containers.appImage, ...Object.values(config.containers.databaseImages)])]
  let missing
  try {
    missing = await probes.missingImages(images)
  } catch (err) {
    return fail(name, `cannot ask the engine for ${images.join(', ')}: ${reasonOf(err)}`, 'fix the engine check first')
  }
  if (missing.length > 0) {
    return fail(name, `the engine has no ${missing.join(', ')} (containers.image_*): new sites of those plans (or, for the app image, sites deploying a source; for a database image, databases of its engine) cannot start`, 'berth images build (or set containers.image_* to images the engine holds)')
  }
  return pass(name, `the engine holds ${images.join(', ')}`)
}

/** A listener Berth opens: where it is configured, its address and protocol. */
export interface Listener {
  key: 'server.listen' | 'tls.listen' | 'dns.listen'
  protocol: 'tcp' | 'udp'
  hostname: string
  port: number
}

/** The listeners the config opens: the API and edge, HTTPS when on, DNS (TCP and UDP) when on. */
export function listenersOf(config: Config): Listener[] {
  const out: Listener[] = [{ key: 'server.listen', protocol: 'tcp', ...config.server.listen }]
  if (config.tls.listen) out.push({ key: 'tls.listen', protocol: 'tcp', ...config.tls.listen })
  if (config.dns.listen) {
    out.push({ key: 'dns.listen', protocol: 'tcp', ...config.dns.listen }, { key: 'dns.listen', protocol: 'udp', ...config.dns.listen })
  }
  return out
}

/** Berth's own process: the executable berth serve runs as (the installed /usr/local/bin/berth, or dist/berth). */
const isBerth = (h: PortHolder) => h.command === 'berth'
/** systemd itself (PID 1), which holds the listeners of berth.socket across restarts and shares them with Berth. */
const isSystemd = (h: PortHolder) => h.pid === 1 && h.command === 'systemd'

/** A listener's port is free, or held by Berth (a running berth serve: doctor after going live). */
export async function checkPort(listener: Listener, probes: BoxProbes): Promise<CheckResult> {
  const where = `${listener.hostname}:${listener.port}/${listener.protocol}`
  const name = `port ${where}`
  let state
  try {
    state = await probes.portState(listener.protocol, listener.hostname, listener.port)
  } catch (err) {
    return fail(name, `${listener.key} ${where}: ${reasonOf(err)}`, `set ${listener.key} to an address of this box (ip -br addr lists them), or 0.0.0.0`)
  }
  if (!state.taken) return pass(name, `${listener.key}: free`)
  const holders = state.holders.map((h) => `${h.command} (pid ${h.pid})`).join(', ')
  if (state.holders.length > 0 && state.holders.every(isBerth)) return pass(name, `${listener.key}: held by Berth, ${holders}`)
  // berth.socket (berth install) keeps the port open in systemd while Berth restarts.
  if (state.holders.length > 0 && state.holders.every((h) => isBerth(h) || isSystemd(h)) && (await probes.unitState('berth.socket')) === 'enabled') {
    return pass(name, `${listener.key}: held by Berth's socket unit, ${holders}`)
  }
  const lookup = `ss -${listener.protocol === 'tcp' ? 'lt' : 'lu'}np 'sport = :${listener.port}'`
  return fail(name, `${listener.key}: taken by ${holders || 'a process this box does not show (another network namespace?)'}`,
    `stop it (${lookup} names it), or move ${listener.key} to another address`)
}

/** The unit `berth install` writes, installed and enabled so Berth starts at boot. */
export async function checkUnit(probes: BoxProbes): Promise<CheckResult> {
  const name = 'systemd_unit'
  const state = await probes.unitState('berth')
  if (state === 'enabled') return pass(name, 'berth.service is installed and enabled: it starts at boot')
  if (state === null) return warn(name, 'no systemctl here: nothing starts Berth at boot or restarts it when it dies', 'run Berth under systemd (berth install), or under your own supervisor')
  if (state === 'not-found') return warn(name, 'berth.service is not installed: nothing starts Berth at boot or restarts it when it dies', 'berth install, then systemctl enable --now berth')
  return warn(name, `berth.service is ${state}: it does not start at boot`, 'systemctl enable --now berth')
}
