import { FileError } from '../../drivers/files/errors'
import { SITE_OWNER, type Home, type OpenHome, type ReadHandle } from '../../drivers/files/types'
import type { ContainerRuntime } from '../../drivers/runtime/types'
import { conflict, invalid } from '../errors'
import type { PlansService } from '../plans'
import type { SiteRow } from '../../store/schema'
import type { AuditLog } from '../audit'
import type { SiteLog } from './views'
import type { EdgeAccessLog } from './access-log'
import { appLineProcess, edgeWritesAccessLog, logSource, rotatedFile, type LogType } from './sources'
import { tailLines } from './tail'

/** Sites remembered with a log without rotated files, at most (beyond, they are looked for at each read). */
const MAX_REMEMBERED = 100_000

/**
 * getSiteLogs: the newest lines of a site's log, read from its volume on the host
 * (no engine call, and it works while the container is stopped); the audit trail's from the
 * store (domain/audit). The tenant owns ~/logs, so the
 * file is opened the way the files API opens every path (src/drivers/files/resolver.ts: no
 * symlink anywhere in the path) and must be a regular file.
 */
export class LogsService {
  constructor(
    private plans: Pick<PlansService, 'get'>,
    private runtime: Pick<ContainerRuntime, 'homePath'>,
    /** Opens a site's home on the host (drivers/files/home.ts). */
    private openHome: OpenHome,
    /** The access log the edge writes: what it still holds is written before a read, so a request just answered is in it. */
    private edgeLog?: Pick<EdgeAccessLog, 'flush'>,
    /** The audit trail (`type=audit`); without it, that log is empty. */
    private audit?: Pick<AuditLog, 'lines'>,
    /** Rotated files read after the current one (logs.rotate_keep; domain/logs/rotation.ts). */
    private rotated = 0,
    /** The site's secret values masked in what is answered (issue 39: an app may print them); absent: as read. */
    private redact?: (siteId: string, text: string) => string,
  ) {}

  /**
   * Per site, its logs found with no rotated file, so that the next reads of a site with no
   * rotated file do not look again; forgotten when LogRotation rotates the site's logs (`rotatedLogs`).
   */
  private noneRotated = new Map<string, Set<string>>()
  /** Rotations told so far: a read that saw none of its site's rotated files remembers it only if none happened meanwhile. */
  private rotations = 0

  /** The site's logs were just rotated: its rotated files are looked for again. */
  rotatedLogs(slug: string): void {
    this.rotations++
    this.noneRotated.delete(slug)
  }

  async read(site: SiteRow, q: { type?: LogType; lines?: number; search?: string; process?: string }): Promise<SiteLog> {
    const type = q.type ?? 'error'
    if (q.process !== undefined && type !== 'app') throw invalid('process', `process picks the lines of one of an app's processes: use it with type=app (got type=${type}).`)
    if (type === 'audit') return { type, file: null, lines: this.audit?.lines(site.id, { lines: q.lines ?? 100, search: q.search || undefined }) ?? [] }
    const hostingType = this.plans.get(site.planSlug).hosting_type
    const source = logSource(hostingType, type, site.runtime)
    if (source.file === null) return { type, file: null, lines: [] }
    // The edge writes it for static sites, and for app sites it serves straight from their web process.
    if (type === 'access' && (edgeWritesAccessLog(hostingType, site.runtime) || site.webPort !== null)) await this.edgeLog?.flush()
    const rotationsBefore = this.rotations
    const home = await openHomeOf(this.openHome, await this.runtime.homePath(site.slug))
    if (!home) return { type, file: source.file, lines: [] }
    const process = type === 'app' ? q.process : undefined
    const filter = process !== undefined ? (line: string) => appLineProcess(line) === process : source.filter?.()
    const search = q.search || undefined
    const keep = filter || search ? (line: string) => (!filter || filter(line)) && (search === undefined || line.includes(search)) : undefined
    const wanted = q.lines ?? 100
    let lines: string[] = []
    try {
      // Newest lines first from the current file, then from the rotated ones, newest first. A log
      // found with no rotated file is not looked at again until the site's logs are rotated.
      const none = this.noneRotated.get(site.slug)
      for (let n = 0; n <= this.rotated && lines.length < wanted && !(n > 0 && none?.has(source.file)); n++) {
        const file = await openLog(home, n === 0 ? source.file : rotatedFile(source.file, n), { quiet: n > 0 })
        if (!file) {
          if (n === 0) continue
          if (n === 1 && this.rotations === rotationsBefore) this.rememberNone(site.slug, source.file)
          break
        }
        lines = [...(await readClosing(file, { lines: wanted - lines.length, keep })), ...lines]
      }
    } finally {
      home.close()
    }
    return { type, file: source.file, lines: this.redact && lines.length > 0 ? this.redact(site.id, lines.join('\n')).split('\n') : lines }
  }

  private rememberNone(slug: string, file: string): void {
    const files = this.noneRotated.get(slug)
    if (files) files.add(file)
    else if (this.noneRotated.size < MAX_REMEMBERED) this.noneRotated.set(slug, new Set([file]))
  }
}

async function readClosing(file: ReadHandle, opts: { lines: number; keep?: (line: string) => boolean }): Promise<string[]> {
  try {
    return await tailLines(file, opts)
  } finally {
    await file.close()
  }
}

/** The home at `hostPath`, open; null when the volume's folder itself is gone (no log either). */
async function openHomeOf(openHome: OpenHome, hostPath: string): Promise<Home | null> {
  try {
    return await openHome(hostPath, SITE_OWNER)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  }
}

/**
 * The log at `path` in `home`, open for reading; null when it (or its folder) does not exist
 * yet. conflict (`param: type`) when the tenant replaced it, or a folder on the way, with a
 * symlink or anything but a regular file; null for that too when `quiet` (a rotated file: the
 * lines read so far are answered).
 */
async function openLog(home: Home, path: string, o: { quiet?: boolean } = {}): Promise<ReadHandle | null> {
  try {
    return await home.openForReading(path)
  } catch (err) {
    if (!(err instanceof FileError)) throw err
    if (err.problem === 'not_found' || o.quiet) return null
    const what = err.problem === 'wrong_type' ? 'is not a regular file (a folder, FIFO, socket or device)' : 'goes through a symbolic link (or a file where a folder should be), which Berth never follows'
    throw conflict(`~/${path} ${what}; delete it and the web server writes a new one when the site restarts.`, 'type')
  }
}
