import { createHash } from 'node:crypto'
import { dirname, join } from 'node:path'
import type Docker from 'dockerode'
import { buildDebianBase, debianBaseTag, DEFAULT_MIRROR, removeTree, type DebianRecipe } from './debian-base'
import { engineCall, followStream, ignoring, openEngine, orNull } from './engine'
import { APP_BASE, APP_BASE_REPO, appDefinitionParts, contextStream, stageAppContext } from './image-app'
import { phpContext } from './image-php'
import { readHostBusybox, staticContext } from './image-static'
import { dbContext, DB_IMAGES, KITS } from '../databases/images'
import type { DbEngine } from '../../domain/databases'

/** The site images and the database images (issue 40) Berth builds; config's containers.image_* name them by default. */
export const IMAGES = { static: 'berth/static:1', php: 'berth/php:1', app: 'berth/app:1', ...DB_IMAGES } as const
export type ImageKind = keyof typeof IMAGES
export const IMAGE_KINDS = Object.keys(IMAGES) as ImageKind[]

/** On each image: a hash of everything it is built from, so an unchanged image is not rebuilt. */
const DEFINITION_LABEL = 'dev.berth.definition'
/** On berth/static: a hash of its definition without the host's busybox (see keptWithoutBusybox). */
const RECIPE_LABEL = 'dev.berth.recipe'

export interface BuildImagesOptions {
  socketPath: string
  /** Build only this image (default: all). */
  only?: ImageKind
  /** Build again even when up to date, the Debian base included, without the build cache. */
  rebuild?: boolean
  mirror?: string
  /** Kept between builds: downloaded Debian packages. */
  cacheDir: string
  /** Kept between builds: berth/app's runtimes from the npm registry (default: `npm` beside cacheDir). */
  npmCacheDir?: string
  /** Scratch space for debootstrap (default /var/tmp: on disk, unlike a nodev tmpfs /tmp). */
  workDir?: string
  /** Environment of the programs run (PATH, proxy variables). */
  env?: Record<string, string | undefined>
  progress?: (line: string) => void
  /** Build under these tags instead of IMAGES' (a test of a changed image while others run the real one). */
  tags?: Partial<Record<ImageKind, string>>
}

export interface ImageBuildResult {
  image: string
  kind: ImageKind
  id: string
  /** `up-to-date`: an image of the same definition existed and was kept. */
  status: 'built' | 'up-to-date'
  seconds: number
  /** The PHP or app image's Debian base, when it was considered. */
  base?: { image: string; status: 'built' | 'up-to-date'; seconds: number }
}

/**
 * Builds the site images through the engine's API, with no registry: berth/static:1 FROM scratch
 * around the host's static busybox (seconds), berth/php:1 on a Debian base made by
 * debootstrap (about two minutes the first time; the base is kept and reused), and berth/app:1
 * (sites that deploy a source) on a Debian base of its own plus Node and Bun from npm. An image whose
 * definition has not changed is left as it is unless `rebuild`.
 *
 * @example
 * await buildImages({ socketPath: '/var/run/docker.sock', cacheDir: '/var/lib/berth/cache/debian', only: 'static' })
 */
export async function buildImages(opts: BuildImagesOptions): Promise<ImageBuildResult[]> {
  const docker = await openEngine(opts.socketPath, 0)
  const kinds = opts.only ? [opts.only] : IMAGE_KINDS
  return engineCall(opts.socketPath, async () => {
    const results: ImageBuildResult[] = []
    for (const kind of kinds) {
      results.push(kind === 'static' ? await buildStatic(docker, opts) : kind === 'php' ? await buildPhp(docker, opts) : kind === 'app' ? await buildApp(docker, opts) : await buildDatabase(docker, kind, opts))
    }
    return results
  })
}

async function buildStatic(docker: Docker, opts: BuildImagesOptions): Promise<ImageBuildResult> {
  const started = Date.now()
  const recipe = definitionOf(staticContext(new Uint8Array(0), []))
  let busybox
  try {
    busybox = await readHostBusybox()
  } catch (err) {
    const kept = opts.rebuild ? null : await keptWithoutBusybox(docker, recipe)
    if (!kept) throw err
    opts.progress?.(`${IMAGES.static}: kept (no static busybox on this host to compare it with: ${(err as Error).message})`)
    return { image: IMAGES.static, kind: 'static', id: kept, status: 'up-to-date', seconds: secondsSince(started) }
  }
  const context = staticContext(busybox.binary, busybox.applets)
  const { id, status } = await buildContext(docker, IMAGES.static, context, definitionOf(context), opts, { [RECIPE_LABEL]: recipe })
  return { image: IMAGES.static, kind: 'static', id, status, seconds: secondsSince(started) }
}

/**
 * The id of the berth/static image to keep when the host's busybox, which the image is built
 * from, cannot be read (busybox-static removed after the build): an image Berth built whose
 * recipe (everything but busybox) is this version's, or that predates the recipe label. Null
 * when there is none, or when its recipe changed and it must be rebuilt.
 */
async function keptWithoutBusybox(docker: Docker, recipe: string): Promise<string | null> {
  const existing = await orNull(docker.getImage(IMAGES.static).inspect())
  const labels = existing?.Config?.Labels ?? {}
  if (!existing || labels['dev.berth.image'] !== IMAGES.static) return null
  return labels[RECIPE_LABEL] === undefined || labels[RECIPE_LABEL] === recipe ? existing.Id : null
}

async function buildPhp(docker: Docker, opts: BuildImagesOptions): Promise<ImageBuildResult> {
  const started = Date.now()
  const baseTag = debianBaseTag()
  const { baseId, base } = await ensureBase(docker, baseTag, undefined, opts, started)
  const context = phpContext(baseTag)
  const tag = tagOf('php', opts)
  // The base's id is part of the definition: a new base makes a new site image.
  const { id, status } = await buildContext(docker, tag, context, definitionOf(context, baseId), opts)
  await removeOldBases(docker, baseTag, baseId)
  return { image: tag, kind: 'php', id, status, seconds: secondsSince(started), base }
}

/**
 * berth/app:1 (image-app.ts): its own Debian base, the supervisor, and Node, npm, corepack and
 * Bun from the npm registry (app-runtimes.ts), fetched on the host and checked against their
 * pinned integrity; the build itself needs no network. Its definition is known without
 * downloading anything, so an image that is up to date costs a second.
 */
async function buildApp(docker: Docker, opts: BuildImagesOptions): Promise<ImageBuildResult> {
  const started = Date.now()
  const baseTag = debianBaseTag(APP_BASE, APP_BASE_REPO)
  const { baseId, base } = await ensureBase(docker, baseTag, APP_BASE, opts, started)
  const definition = definitionOf(new Uint8Array(0), ...appDefinitionParts(baseTag), baseId)
  const env = { PATH: opts.env?.PATH ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' }
  const workDir = opts.workDir ?? '/var/tmp'
  let stage: string | null = null
  const tag = tagOf('app', opts)
  try {
    const { id, status } = await buildContext(docker, tag, async () => {
      stage = await stageAppContext(baseTag, workDir, opts.npmCacheDir ?? join(dirname(opts.cacheDir), 'npm'), (line) => opts.progress?.(`${tag}: ${line}`), env)
      return contextStream(stage, env)
    }, definition, opts)
    await removeOldBases(docker, baseTag, baseId)
    return { image: tag, kind: 'app', id, status, seconds: secondsSince(started), base }
  } finally {
    if (stage) await removeTree(stage)
  }
}

/**
 * berth/postgres:1, berth/mariadb:1, berth/redis:1: each engine's Debian base (its server from
 * Debian's own packages, by debootstrap: about a minute and a half each the first time) and its
 * start script (drivers/databases/).
 */
async function buildDatabase(docker: Docker, engine: DbEngine, opts: BuildImagesOptions): Promise<ImageBuildResult> {
  const started = Date.now()
  const kit = KITS[engine]
  const baseTag = debianBaseTag(kit.base, kit.baseRepo)
  const { baseId, base } = await ensureBase(docker, baseTag, kit.base, opts, started)
  const context = dbContext(kit, baseTag)
  const tag = tagOf(engine, opts)
  const { id, status } = await buildContext(docker, tag, context, definitionOf(context, baseId), opts)
  await removeOldBases(docker, baseTag, baseId)
  return { image: tag, kind: engine, id, status, seconds: secondsSince(started), base }
}

/** The Debian base `baseTag`, made by debootstrap unless it exists (or `rebuild`). */
async function ensureBase(docker: Docker, baseTag: string, recipe: DebianRecipe | undefined, opts: BuildImagesOptions, started: number) {
  let baseId = opts.rebuild ? null : (await orNull(docker.getImage(baseTag).inspect()))?.Id ?? null
  const base = { image: baseTag, status: 'up-to-date' as 'built' | 'up-to-date', seconds: 0 }
  if (!baseId) {
    baseId = await buildDebianBase(docker, baseTag, {
      mirror: opts.mirror ?? DEFAULT_MIRROR,
      cacheDir: opts.cacheDir,
      workDir: opts.workDir ?? '/var/tmp',
      env: opts.env ?? {},
      progress: (line) => opts.progress?.(`${baseTag}: ${line}`),
      recipe,
    })
    Object.assign(base, { status: 'built', seconds: secondsSince(started) })
  }
  return { baseId, base }
}

/** Earlier bases (another definition, or replaced by --rebuild) go once nothing builds on them. */
async function removeOldBases(docker: Docker, baseTag: string, baseId: string): Promise<void> {
  const bases = await docker.listImages({ filters: { reference: [baseTag.split(':')[0]] } })
  for (const old of bases) if (old.Id !== baseId) await removeUnused(docker, old.Id)
}

/** A context streamed from elsewhere (berth/app's, too large to hold): made only when a build is needed. */
type StreamedContext = () => Promise<{ stream: NodeJS.ReadableStream; done: Promise<number> }>

/** Builds `context` as `tag` unless an image of that definition is already tagged so. */
async function buildContext(docker: Docker, tag: string, context: Uint8Array | StreamedContext, definition: string, opts: BuildImagesOptions, labels: Record<string, string> = {}): Promise<{ id: string; status: 'built' | 'up-to-date' }> {
  const existing = await orNull(docker.getImage(tag).inspect())
  if (existing && !opts.rebuild && existing.Config?.Labels?.[DEFINITION_LABEL] === definition) {
    opts.progress?.(`${tag}: up to date`)
    return { id: existing.Id, status: 'up-to-date' }
  }
  opts.progress?.(`${tag}: building`)
  const streamed = typeof context === 'function' ? await context() : null
  const stream = await docker.buildImage((streamed ? streamed.stream : Buffer.from(context as Uint8Array)) as never, {
    t: tag,
    labels: { ...labels, [DEFINITION_LABEL]: definition, 'dev.berth.image': tag },
    nocache: opts.rebuild === true,
    rm: true,
    forcerm: true,
  })
  await followStream(docker, stream)
  if (streamed && (await streamed.done) !== 0) throw new Error(`tar of ${tag}'s build context failed`)
  const id = (await docker.getImage(tag).inspect()).Id
  if (existing && existing.Id !== id) await removeUnused(docker, existing.Id)
  return { id, status: 'built' }
}

/**
 * Removes an image a build replaced, unless a container (even a stopped one) or another image
 * still uses it: the engine refuses those with 409, and they stay until their sites move on.
 * Without this, every rebuild of the PHP image would leave 190 MB behind.
 */
export async function removeUnused(docker: Docker, id: string): Promise<void> {
  await ignoring([404, 409], docker.getImage(id).remove())
}

const tagOf = (kind: ImageKind, opts: BuildImagesOptions) => opts.tags?.[kind] ?? IMAGES[kind]

const definitionOf = (context: Uint8Array, ...parts: string[]) =>
  createHash('sha256').update(context).update(parts.join('\n')).digest('hex').slice(0, 16)

const secondsSince = (started: number) => Math.round((Date.now() - started) / 100) / 10
