import { FileError, type FileNextStep } from '../../drivers/files/errors'
import type { FileEntry } from '../../drivers/files/home'
import { SITE_OWNER, type FileOwner, type Home, type OpenHome } from '../../drivers/files/types'
import { SiteNotRunnableError, type ContainerRuntime } from '../../drivers/runtime/types'
import type { SiteRow } from '../../store/schema'
import type { RestoreGuard } from '../archives'
import { diskFull, type SiteChanges } from '../sites'
import { conflict, DomainError, invalid, notFound, op, say, tooLarge, type Message } from '../errors'
import { FILE_LIMITS } from './limits'

/**
 * Text that UTF-8 can carry: an unpaired surrogate (`\ud800` in JSON) would be stored as U+FFFD, a
 * different name or content than the one sent. invalid (422) naming the field instead.
 */
function wellFormed(value: string, field: string): void {
  if (!value.isWellFormed()) throw invalid(field, `'${field}' has an unpaired surrogate (such as \\ud800 in JSON), which UTF-8 cannot store; send well-formed Unicode text.`)
}

/** Standard base64 (RFC 4648 section 4), padding optional. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/**
 * The files API: a site's home folder, read and changed from the host through its volume (no
 * engine call, no exec in the container). Path safety is entirely the files driver's
 * (src/drivers/files/resolver.ts); this maps its outcomes to domain errors and enforces the limits.
 *
 * The site comes from the SiteGuard: the caller's (not_found otherwise), and for changes changeable
 * (conflict while provisioning, suspended or pending deletion). Changes also need no restore running
 * (conflict: the restore swaps the whole home; RestoreGuard makes it wait for the changes already
 * running).
 */
export class FilesService {
  constructor(
    private runtime: ContainerRuntime,
    private restores: Pick<RestoreGuard, 'beginChange'>,
    /** Opens a site's home on the host (drivers/files/home.ts). */
    private openHome: OpenHome,
    private owner: FileOwner = SITE_OWNER,
    private changes?: Pick<SiteChanges, 'changed'>,
  ) {}

  list(site: SiteRow, path = '') {
    wellFormed(path, 'path')
    return this.inHome(site.slug, 'path', (home) => home.list(path, FILE_LIMITS.listEntries))
  }

  read(site: SiteRow, path: string) {
    wellFormed(path, 'path')
    return this.inHome(site.slug, 'path', (home) => home.read(path, FILE_LIMITS.readBytes))
  }

  write(site: SiteRow, input: { path: string; content: string }) {
    wellFormed(input.path, 'path')
    wellFormed(input.content, 'content')
    const size = Buffer.byteLength(input.content, 'utf8')
    if (size > FILE_LIMITS.writeBytes) {
      throw tooLarge(say`content is ${size} bytes in UTF-8; writes take at most ${FILE_LIMITS.writeBytes}. Use ${op('uploadFile', { tenant_slug: site.slug })} (up to ${FILE_LIMITS.uploadBytes} bytes) for larger files.`, 'content')
    }
    return this.change(site, 'content', (home) => home.write(input.path, Buffer.from(input.content, 'utf8')))
  }

  upload(site: SiteRow, input: { path: string; content_b64: string }) {
    wellFormed(input.path, 'path')
    const data = decodeBase64(input.content_b64)
    return this.change(site, 'content_b64', (home) => home.write(input.path, data))
  }

  mkdir(site: SiteRow, input: { path: string }) {
    wellFormed(input.path, 'path')
    return this.change(site, 'path', (home) => home.mkdir(input.path))
  }

  delete(site: SiteRow, input: { path: string }) {
    wellFormed(input.path, 'path')
    return this.change(site, 'path', (home) => home.remove(input.path))
  }

  /** `inHome` for a change: conflict while a restore of the site runs; else counted, so a restore accepted meanwhile waits for it. */
  private async change<T>(site: SiteRow, contentParam: string, fn: (home: Home) => T | Promise<T>): Promise<T> {
    const end = this.restores.beginChange(site)
    try {
      const result = await this.inHome(site.slug, contentParam, fn)
      this.changes?.changed({ siteId: site.id, slug: site.slug, reason: 'files' })
      return result
    } finally {
      end()
    }
  }

  /** Opens the site's home for `fn`, and turns the driver's refusals into API errors. */
  private async inHome<T>(slug: string, contentParam: string, fn: (home: Home) => T | Promise<T>): Promise<T> {
    const dir = await this.runtime.homePath(slug)
    let home: Home
    try {
      home = await this.openHome(dir, this.owner)
    } catch {
      throw new SiteNotRunnableError(`The files of site '${slug}' are not available right now.`)
    }
    try {
      return await fn(home)
    } catch (err) {
      // The home's filesystem is the plan's disk_gb (issue 38): 507 with its figures, read now.
      if (err instanceof FileError && err.problem === 'no_space') throw diskFull(slug, await this.runtime.siteDisk(slug).catch(() => null))
      throw err instanceof FileError ? toDomainError(err, contentParam, slug) : err
    } finally {
      home.close()
    }
  }
}

function toDomainError(err: FileError, contentParam: string, slug: string): DomainError {
  const message = withNextStep(err, slug)
  switch (err.problem) {
    case 'bad_path':
    case 'wrong_type':
      return invalid('path', message)
    case 'not_found':
      return notFound(message, 'path')
    case 'too_large':
      return tooLarge(message, 'path')
    case 'not_text':
      return new DomainError('not_text', message, 'path')
    case 'no_space': // answered by inHome (507)
      return tooLarge(message, contentParam)
    case 'busy':
      return conflict(message, 'path')
  }
}

/**
 * The driver's sentence with the operation that helps, named by the door that answers
 * (`GET /sites/acme/files/` through REST, `list_files` through MCP); the driver names none.
 */
function withNextStep(err: FileError, slug: string): Message | string {
  const step: FileNextStep | null = err.next
  if (step === null) return err.message
  const site = { tenant_slug: slug }
  switch (step.op) {
    case 'list':
      return step.path === undefined
        ? say`${err.message}; ${op('listFiles', site)} with path=<folder> lists a folder.`
        : say`${err.message}; list it with ${op('listFiles', site)} and path=${step.path}.`
    case 'read':
      return say`${err.message}; read it with ${op('readFile', site)}.`
    case 'delete':
      return say`${err.message}; delete it first (${op('deleteFile', site)}) or choose another name.`
  }
}

/** The bytes of `content_b64`: invalid when it is not base64, too_large past the upload limit (checked before decoding). */
function decodeBase64(text: string): Buffer {
  const padded = text.endsWith('=')
  if (!BASE64.test(text) || text.length % 4 === 1 || (padded && text.length % 4 !== 0)) {
    throw invalid('content_b64', 'content_b64 must be standard base64 (A-Z, a-z, 0-9, +, /, = padding) with no spaces or line breaks.')
  }
  const padding = text.endsWith('==') ? 2 : padded ? 1 : 0
  const size = Math.floor(((text.length - padding) * 3) / 4)
  if (size > FILE_LIMITS.uploadBytes) {
    throw tooLarge(`The file is ${size} bytes; uploads take at most ${FILE_LIMITS.uploadBytes} bytes, so split it or send a smaller one.`, 'content_b64')
  }
  return Buffer.from(text, 'base64')
}

export type { FileEntry }
