import type { ContainerRuntime, SiteDisk } from '../../drivers/runtime/types'
import type { Clock } from '../../lib/clock'
import { CodedError, op, say } from '../errors'

/**
 * A site's disk as its owner sees it (issue 38): its plan's `disk_gb` is the size of the
 * filesystem its home lives on (the runtime's `siteDisk`), so a write past it fails with "no
 * space" inside the container and through the files API alike. This file holds every decision
 * about that limit that the API shows: the figures, the warning before it is reached, the 507 at
 * it and the 409 of a plan too small for the files. The events issue turns the warning into an
 * event from `diskWarning`, the one place the threshold is.
 */

/** The share of the limit from which the site view warns its owner. */
export const DISK_WARNING_RATIO = 0.9

/** How long a site's figures are reused: a statfs here, an engine exec for a site on a node. */
export const DISK_CACHE_MS = 2_000

/** A warning in the site view: a code a program reads and a sentence saying what to do. */
export interface SiteWarning {
  code: string
  message: string
}

/**
 * The figures of the site view's `usage` and the metrics' `current`: what the site's filesystem
 * reports, its limit being its usable size (the plan's disk_gb less ext4's own records, about
 * 4 % of 1 GB), so that the percentage reaches 100 exactly when writes fail.
 */
export interface DiskFigures {
  disk_bytes: number | null
  disk_limit_bytes: number | null
}

const GIB = 1024 ** 3

/** Bytes as a person reads them: `0.95 GB of 0.96 GB`, `12.3 MB` (binary units, as the plans' `disk_gb`). */
export function bytesText(n: number): string {
  if (n >= GIB / 2) return `${(n / GIB).toFixed(2)} GB`
  if (n >= 1024 ** 2) return `${(n / 1024 ** 2).toFixed(1)} MB`
  return `${Math.max(0, Math.round(n / 1024))} KB`
}

/** The percentage used, one decimal, never over 100. */
const percent = (disk: SiteDisk) => (disk.limitBytes > 0 ? Math.min(100, Math.round((disk.usedBytes / disk.limitBytes) * 1000) / 10) : 100)

export const diskFigures = (disk: SiteDisk | null): DiskFigures => ({ disk_bytes: disk?.usedBytes ?? null, disk_limit_bytes: disk?.limitBytes ?? null })

/** `disk_almost_full` from DISK_WARNING_RATIO of the limit on, else null. */
export function diskWarning(slug: string, disk: SiteDisk | null): SiteWarning | null {
  if (!disk || disk.limitBytes <= 0 || disk.usedBytes < disk.limitBytes * DISK_WARNING_RATIO) return null
  return {
    code: 'disk_almost_full',
    message: `Site '${slug}' uses ${bytesText(disk.usedBytes)} of its ${bytesText(disk.limitBytes)} disk (${percent(disk)} %); at the limit its writes fail with "no space". Delete files (logs, old uploads) or scale to a plan with more disk.`,
  }
}

/**
 * 507 DISK_FULL, `param: tenant_slug`: a write into the site's home found its disk full. `disk`
 * is the runtime's figures, null when it has none (the message then has no figures).
 */
export function diskFull(slug: string, disk: SiteDisk | null, what = 'The write'): CodedError {
  const site = { tenant_slug: slug }
  const figures = disk ? ` (${bytesText(disk.usedBytes)} of ${bytesText(disk.limitBytes)} used, ${percent(disk)} %)` : ''
  return new CodedError(
    'insufficient_storage',
    'DISK_FULL',
    say`${what} did not fit: the disk of site '${slug}' is full${figures}; nothing was changed. Delete files (${op('deleteFile', site)}) or scale to a plan with more disk (${op('scaleSite', site)}), then retry.`,
    'tenant_slug',
    { used_bytes: disk?.usedBytes ?? null, limit_bytes: disk?.limitBytes ?? null, available_bytes: disk?.availableBytes ?? null },
  )
}

/**
 * Why Berth's own write of `needBytes` into the site's home (a restore, a rollback's files) would
 * not fit, in words stored with the deployment or archive (DISK_FULL, with the figures), or null
 * when it fits or the runtime reports no disk. Checked before anything is touched, so a refusal
 * leaves the site as it was: the extraction fills a staging folder on the same disk before the
 * swap, so it needs room for the whole archive beside the files it replaces.
 */
export function noRoomFor(slug: string, disk: SiteDisk | null, needBytes: number, what: string): string | null {
  if (!disk || needBytes <= disk.availableBytes) return null
  return `DISK_FULL: ${what} needs about ${bytesText(needBytes)} on the disk of site '${slug}', which has ${bytesText(disk.availableBytes)} free (${bytesText(disk.usedBytes)} of ${bytesText(disk.limitBytes)} used); nothing was changed. Delete files or scale to a plan with more disk, then retry.`
}

/**
 * The reason added to a failed deploy hook when the site's disk is full or nearly (at the
 * warning's threshold): "no space" inside the container is the likely cause, said with the
 * figures; null otherwise. (The hook's exit code cannot say which write failed, and its output is
 * the site's own: never parsed.)
 */
export function hookOutOfSpace(slug: string, disk: SiteDisk | null): string | null {
  if (!disk || disk.limitBytes <= 0 || disk.usedBytes < disk.limitBytes * DISK_WARNING_RATIO) return null
  return `DISK_FULL: the disk of site '${slug}' is ${percent(disk)} % full (${bytesText(disk.usedBytes)} of ${bytesText(disk.limitBytes)}), so a write of the hook likely failed with "no space"; delete files or scale to a plan with more disk, then deploy again.`
}

/** 409 DISK_TOO_SMALL, `param: new_plan`: the files take more than the plan's disk holds. */
export function diskTooSmall(slug: string, plan: { slug: string; diskGb: number }, usedBytes: number): CodedError {
  const wanted = plan.diskGb * GIB
  return new CodedError(
    'conflict',
    'DISK_TOO_SMALL',
    say`Site '${slug}' uses ${bytesText(usedBytes)} of disk, more than the ${plan.diskGb} GB of plan '${plan.slug}'; nothing was changed. Delete files (${op('deleteFile', { tenant_slug: slug })}) until it uses less, or pick a plan with more disk (${op('listPlans')}).`,
    'new_plan',
    { used_bytes: usedBytes, wanted_bytes: wanted, new_plan: plan.slug },
  )
}

/**
 * The sites' disks as the runtime reports them, each reused for DISK_CACHE_MS: the site view is
 * read often (agents poll it) and a site on a cluster node costs an engine exec. A runtime that
 * cannot answer (the engine down, the node away) gives null: the view shows no figures rather
 * than failing.
 */
export class SiteDiskCache {
  private cache = new Map<string, { at: number; disk: Promise<SiteDisk | null> }>()

  constructor(
    private runtime: Pick<ContainerRuntime, 'siteDisk'>,
    private clock: Clock,
  ) {}

  get(slug: string): Promise<SiteDisk | null> {
    const now = this.clock.now()
    const hit = this.cache.get(slug)
    if (hit && now - hit.at < DISK_CACHE_MS) return hit.disk
    if (this.cache.size > 10_000) this.cache.clear()
    const disk = this.runtime.siteDisk(slug).catch(() => null)
    this.cache.set(slug, { at: now, disk })
    return disk
  }

  /** Fresh figures (for an error message or a plan change), which the next reads reuse. */
  fresh(slug: string): Promise<SiteDisk | null> {
    this.cache.delete(slug)
    return this.get(slug)
  }
}
