import type { SiteDisk } from '../../drivers/runtime/types'
import type { SiteRow } from '../../store/schema'
import { CodedError, invalid, op, say } from '../errors'
import { bytesText, diskFull } from '../sites'
import type { DeploySource } from './ports'

/** Why the sources' drivers refused a tree or a repository, in kinds the API answers apart. */
export type SourceRefusal = 'unsafe' | 'too_large' | 'too_many_files' | 'unreadable' | 'bad_url' | 'blocked_address' | 'bad_ref'

/** A source refused by the drivers (drivers/sources, drivers/net), already worded for the agent. */
export class SourceRefusedError extends Error {
  constructor(readonly refusal: SourceRefusal, message: string) {
    super(message)
  }
}

/** An archive body's formats, by Content-Type. */
export const ARCHIVE_TYPES: Record<string, 'gzip' | 'zip'> = {
  'application/gzip': 'gzip',
  'application/x-gzip': 'gzip',
  'application/x-tar+gzip': 'gzip',
  'application/zip': 'zip',
  'application/x-zip-compressed': 'zip',
}
/** An archive sent in JSON (archive_base64, for MCP clients): at most this many bytes once decoded. */
export const ARCHIVE_B64_BYTES = 10 * 1024 * 1024
export const ARCHIVE_B64_MAX_CHARS = Math.ceil(ARCHIVE_B64_BYTES / 3) * 4
const DEPLOY_ROUTE = /^\/api\/v1\/sites\/[^/]+\/deploy\/?$/
/** The body limit of deploySite (its JSON may carry archive_base64), for the API's body parser. */
export function deployBodyLimit(path: string): { bytes: number; param: string } | undefined {
  return DEPLOY_ROUTE.test(path) ? { bytes: ARCHIVE_B64_MAX_CHARS + 64 * 1024, param: 'source.archive_base64' } : undefined
}

/** Entries an archive may hold (files, folders and links): a tree of more is refused, not half-unpacked. */
export const MAX_ARCHIVE_FILES = 200_000

export interface AppIntakeDeps {
  /** The upload to a checked plain tar in the work file of `id`; throws SourceRefusedError. */
  toCheckedTar(body: ReadableStream<Uint8Array>, format: 'gzip' | 'zip', id: string, limits: { maxBytes: number; maxFiles: number }): Promise<{ files: number; bytes: number }>
  /** The repository's URL and ref checked (its host resolved and allowed); throws SourceRefusedError. */
  checkGit(url: string, ref: string | null, credentials: { token: boolean; deployKey: boolean }): Promise<void>
  siteDisk(slug: string): Promise<SiteDisk | null>
  /** The box keeps room for itself (domain/room): 507 before an upload lands on its disk. */
  ensureRoom(what: string): void
  /** The names of the site's secrets (a token or deploy key must be one). */
  secretNames(siteId: string): string[]
  deploySource(site: SiteRow, source: DeploySource, id: string): unknown
}

export interface GitSourceInput {
  git?: string
  archive_base64?: string
  format?: 'gzip' | 'zip'
  ref?: string
  token_secret?: string
  ssh_key_secret?: string
}

/**
 * What the deploy route does with a source before anything is queued (issue 39): an archive is
 * received, bounded by the site's free disk, and checked member by member, and a repository's
 * address is checked, so that a refusal is the request's own answer (422, 507) and nothing is
 * queued or written to the site.
 */
export class AppIntake {
  constructor(private d: AppIntakeDeps) {}

  /** `param`: where the archive came: the raw body, or source.archive_base64 (a refusal names it). */
  async archive(site: SiteRow, body: ReadableStream<Uint8Array> | null, format: 'gzip' | 'zip', param = 'body'): Promise<unknown> {
    if (!body) throw invalid('body', `Send the archive as the request's body (Content-Type application/${format}), or JSON {"source": {"git": URL}}; the body was empty.`)
    this.d.ensureRoom('deployments of archives')
    const disk = await this.d.siteDisk(site.slug)
    const id = crypto.randomUUID()
    let got: { files: number; bytes: number }
    try {
      got = await this.d.toCheckedTar(body, format, id, { maxBytes: disk ? disk.availableBytes : Number.MAX_SAFE_INTEGER, maxFiles: MAX_ARCHIVE_FILES })
    } catch (err) {
      throw this.refusal(site, disk, err, param)
    }
    return this.d.deploySource(site, { kind: 'archive', format, files: got.files, bytes: got.bytes }, id)
  }

  /** A source given in JSON: a repository, or an archive in base64 (MCP's way to send one). */
  async source(site: SiteRow, input: GitSourceInput): Promise<unknown> {
    if ((input.git === undefined) === (input.archive_base64 === undefined)) {
      throw invalid('source', 'Give the source as "git" (a repository URL) or "archive_base64" (a tar.gz or zip), one of them.')
    }
    if (input.archive_base64 === undefined) return this.git(site, input as GitSourceInput & { git: string })
    if (input.token_secret !== undefined || input.ssh_key_secret !== undefined || input.ref !== undefined) {
      throw invalid('source', 'ref, token_secret and ssh_key_secret go with "git", not with an archive.')
    }
    const bytes = Buffer.from(input.archive_base64, 'base64')
    if (bytes.length > ARCHIVE_B64_BYTES) throw invalid('source.archive_base64', `The archive is ${bytes.length} bytes once decoded; archive_base64 takes at most ${ARCHIVE_B64_BYTES} (10 MiB). Send a larger one as the raw body of the request (Content-Type application/gzip), or deploy from git.`)
    return this.archive(site, new Blob([bytes]).stream(), input.format ?? 'gzip', 'source.archive_base64')
  }

  async git(site: SiteRow, input: GitSourceInput & { git: string }): Promise<unknown> {
    const names = new Set(this.d.secretNames(site.id))
    for (const field of ['token_secret', 'ssh_key_secret'] as const) {
      const name = input[field]
      if (name !== undefined && !names.has(name)) {
        throw invalid(`source.${field}`, say`Site '${site.slug}' has no secret named ${name}; set it first (${op('updateSiteEnv', { tenant_slug: site.slug })} with "secret": ["${name}"]), then deploy.`)
      }
    }
    if (input.token_secret !== undefined && input.ssh_key_secret !== undefined) throw invalid('source.ssh_key_secret', 'Give a token (https URLs) or a deploy key (ssh URLs), not both.')
    try {
      await this.d.checkGit(input.git, input.ref ?? null, { token: input.token_secret !== undefined, deployKey: input.ssh_key_secret !== undefined })
    } catch (err) {
      throw this.refusal(site, null, err, 'source.git')
    }
    return this.d.deploySource(site, { kind: 'git', url: input.git, ref: input.ref ?? null, token_secret: input.token_secret ?? null, ssh_key_secret: input.ssh_key_secret ?? null }, crypto.randomUUID())
  }

  /** `param`: the field the source came in (body, source.archive_base64, source.git). */
  private refusal(site: SiteRow, disk: SiteDisk | null, err: unknown, param: string): Error {
    if (!(err instanceof SourceRefusedError)) return err as Error
    switch (err.refusal) {
      case 'too_large': {
        const full = diskFull(site.slug, disk, 'The archive')
        return new CodedError('insufficient_storage', 'DISK_FULL', `${err.message} The site's disk has ${disk ? bytesText(disk.availableBytes) : 'no more'} free; nothing was deployed. Delete files or scale to a plan with more disk, then retry.`, param, full.details)
      }
      case 'unsafe': return new CodedError('invalid', 'UNSAFE_ARCHIVE', `${err.message} Make the archive of the tree's own files only (tar -czf app.tgz -C my-app .), then deploy it again.`, param, {})
      case 'too_many_files': return new CodedError('invalid', 'UNSAFE_ARCHIVE', `${err.message} Nothing was deployed.`, param, { max_files: MAX_ARCHIVE_FILES })
      case 'unreadable': return new CodedError('invalid', 'UNREADABLE_ARCHIVE', `${err.message} Send a tar.gz (Content-Type application/gzip) or a zip (application/zip).`, param, {})
      case 'bad_ref': return invalid('source.ref', err.message)
      case 'blocked_address': return new CodedError('invalid', 'BLOCKED_ADDRESS', err.message, param, {})
      default: return invalid('source.git', err.message)
    }
  }
}
