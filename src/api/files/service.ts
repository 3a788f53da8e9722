import { FileError } from '../../drivers/files/errors'
import { SITE_OWNER, SiteHome, type FileEntry, type FileOwner } from '../../drivers/files/home'
import { SiteNotRunnableError, type ContainerRuntime } from '../../drivers/runtime/types'
import type { SiteRow } from '../../store/schema'
import type { RestoreGuard } from '../archives/restore-guard'
import { ConflictError, NotFoundError, PayloadTooLargeError, UnsupportedMediaError, ValidationError, type AppError } from '../http/errors'
import type { Principal } from '../keys/service'
import type { SitesService } from '../sites/service'
import { FILE_LIMITS } from './limits'

/** Standard base64 (RFC 4648 section 4), padding optional. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/**
 * The files API: a site's home folder, read and changed from the host through its volume (no
 * engine call, no exec in the container). Path safety is entirely the files driver's
 * (src/drivers/files/resolver.ts); this maps its outcomes to statuses and enforces the limits.
 *
 * Reads need the site to be the caller's (404 otherwise); changes also need it changeable
 * (409 while provisioning, suspended or pending deletion) and no restore running (409: the
 * restore swaps the whole home; RestoreGuard makes it wait for the changes already running).
 */
export class FilesService {
  constructor(
    private sites: SitesService,
    private runtime: ContainerRuntime,
    private restores: Pick<RestoreGuard, 'beginChange'>,
    private owner: FileOwner = SITE_OWNER,
  ) {}

  list(p: Principal, slug: string, path = '') {
    this.sites.requireOwned(p, slug)
    return this.inHome(slug, 'path', (home) => home.list(path, FILE_LIMITS.listEntries))
  }

  read(p: Principal, slug: string, path: string) {
    this.sites.requireOwned(p, slug)
    return this.inHome(slug, 'path', (home) => home.read(path, FILE_LIMITS.readBytes))
  }

  write(p: Principal, slug: string, input: { path: string; content: string }) {
    const site = this.sites.requireChangeable(p, slug)
    const size = Buffer.byteLength(input.content, 'utf8')
    if (size > FILE_LIMITS.writeBytes) {
      throw new PayloadTooLargeError(`content is ${size} bytes in UTF-8; writes take at most ${FILE_LIMITS.writeBytes}. Use files/upload/ (up to ${FILE_LIMITS.uploadBytes} bytes) for larger files.`, 'content')
    }
    return this.change(site, 'content', (home) => home.write(input.path, Buffer.from(input.content, 'utf8')))
  }

  upload(p: Principal, slug: string, input: { path: string; content_b64: string }) {
    const site = this.sites.requireChangeable(p, slug)
    const data = decodeBase64(input.content_b64)
    return this.change(site, 'content_b64', (home) => home.write(input.path, data))
  }

  mkdir(p: Principal, slug: string, input: { path: string }) {
    return this.change(this.sites.requireChangeable(p, slug), 'path', (home) => home.mkdir(input.path))
  }

  delete(p: Principal, slug: string, input: { path: string }) {
    return this.change(this.sites.requireChangeable(p, slug), 'path', (home) => home.remove(input.path))
  }

  /** `inHome` for a change: 409 while a restore of the site runs; else counted, so a restore accepted meanwhile waits for it. */
  private async change<T>(site: SiteRow, contentParam: string, fn: (home: SiteHome) => T | Promise<T>): Promise<T> {
    const end = this.restores.beginChange(site)
    try {
      return await this.inHome(site.slug, contentParam, fn)
    } finally {
      end()
    }
  }

  /** Opens the site's home for `fn`, and turns the driver's refusals into API errors. */
  private async inHome<T>(slug: string, contentParam: string, fn: (home: SiteHome) => T | Promise<T>): Promise<T> {
    const dir = await this.runtime.homePath(slug)
    let home: SiteHome
    try {
      home = SiteHome.open(dir, this.owner)
    } catch {
      throw new SiteNotRunnableError(`The files of site '${slug}' are not available right now.`)
    }
    try {
      return await fn(home)
    } catch (err) {
      throw err instanceof FileError ? toAppError(err, contentParam) : err
    } finally {
      home.close()
    }
  }
}

function toAppError(err: FileError, contentParam: string): AppError {
  switch (err.problem) {
    case 'bad_path':
    case 'wrong_type':
      return new ValidationError('path', err.message)
    case 'not_found':
      return new NotFoundError(err.message, 'path')
    case 'too_large':
      return new PayloadTooLargeError(err.message, 'path')
    case 'not_text':
      return new UnsupportedMediaError(err.message, 'path')
    case 'no_space':
      return new PayloadTooLargeError(err.message, contentParam)
    case 'busy':
      return new ConflictError(err.message, 'path')
  }
}

/** The bytes of `content_b64`: 422 when it is not base64, 413 past the upload limit (checked before decoding). */
function decodeBase64(text: string): Buffer {
  const padded = text.endsWith('=')
  if (!BASE64.test(text) || text.length % 4 === 1 || (padded && text.length % 4 !== 0)) {
    throw new ValidationError('content_b64', 'content_b64 must be standard base64 (A-Z, a-z, 0-9, +, /, = padding) with no spaces or line breaks.')
  }
  const padding = text.endsWith('==') ? 2 : padded ? 1 : 0
  const size = Math.floor(((text.length - padding) * 3) / 4)
  if (size > FILE_LIMITS.uploadBytes) {
    throw new PayloadTooLargeError(`The file is ${size} bytes; uploads take at most ${FILE_LIMITS.uploadBytes} bytes, so split it or send a smaller one.`, 'content_b64')
  }
  return Buffer.from(text, 'base64')
}

export type { FileEntry }
