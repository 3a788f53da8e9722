import { join } from 'node:path'
import { DEFAULT_MIRROR } from '../drivers/runtime/debian-base'
import { buildImages, IMAGE_KINDS, IMAGES, type ImageBuildResult, type ImageKind } from '../drivers/runtime/images'
import { COMMON_OPTIONS, STORE_OPTIONS, UsageError, type Command } from './command'
import { configFrom } from './config-flags'

function table(results: ImageBuildResult[]): string {
  const rows = [['IMAGE', 'STATUS', 'SECONDS', 'ID']]
  for (const r of results) {
    if (r.base) rows.push([r.base.image, r.base.status, r.base.seconds.toFixed(1), ''])
    rows.push([r.image, r.status, r.seconds.toFixed(1), r.id.replace(/^sha256:/, '').slice(0, 12)])
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)))
  return rows.map((row) => row.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd()).join('\n')
}

export const imagesBuildCommand: Command = {
  path: ['images', 'build'],
  summary: `Build the site images (${IMAGES.static}, ${IMAGES.php}, ${IMAGES.app}) and the databases' (${IMAGES.postgres}, ${IMAGES.mariadb}, ${IMAGES.redis}) locally; no registry needed.`,
  usage: 'berth images build [--only static|php|app|postgres|mariadb|redis] [--rebuild] [--mirror URL] [--config FILE] [--json]',
  description: [
    `${IMAGES.static}: FROM scratch around the host's static busybox (apt-get install busybox-static); seconds.`,
    `${IMAGES.php}: nginx + PHP-FPM + sshd on Debian bookworm made by debootstrap (needs root), with`,
    'PHP\'s mysqli, pdo_mysql, pgsql, redis, xml, mbstring, curl, gd, zip, intl and bcmath and the',
    'databases\' clients (psql, mariadb, redis-cli); about two minutes the first time. The Debian base',
    'and its packages (in data_dir/cache/debian) are kept, and an image whose definition has not',
    'changed is left as it is, so a second run takes a second.',
    `${IMAGES.app}: the image of sites that deploy a source (apps): its own Debian base (nginx, PHP-FPM,`,
    'sshd, Python 3 with venv, git, PHP\'s extensions and the clients as above), Node 24 with npm and',
    'corepack, and Bun 1.4.5, downloaded from the npm registry at build time with their pinned',
    'integrity checked (kept in data_dir/cache/npm), and the supervisor; about five minutes the first',
    'time. The box\'s own CAs (/usr/local/share/ca-certificates) are trusted inside it.',
    `${IMAGES.postgres}, ${IMAGES.mariadb}, ${IMAGES.redis}: the sites' databases, each on a Debian base of its own`,
    '(Debian 12\'s postgresql-15, mariadb-server, redis-server by debootstrap) with its start script; one to three minutes each the first time.',
  ].join('\n'),
  options: {
    only: { type: 'string', value: 'static|php|app|postgres|mariadb|redis', help: 'Build this image only.' },
    rebuild: { type: 'boolean', help: 'Build again even when up to date: a fresh debootstrap, no build cache.' },
    mirror: { type: 'string', value: 'URL', help: `Debian mirror for the PHP and app images (default ${DEFAULT_MIRROR}).` },
    ...STORE_OPTIONS,
    ...COMMON_OPTIONS,
  },
  examples: ['berth images build', 'berth images build --only static --json', 'berth images build --only php --rebuild', 'berth images build --only app', 'berth images build --only postgres'],
  async run(ctx) {
    const only = ctx.values.only as string | undefined
    if (only !== undefined && !IMAGE_KINDS.includes(only as ImageKind)) {
      throw new UsageError(`--only must be ${IMAGE_KINDS.join(', ')} (got '${only}')`)
    }
    const config = configFrom(ctx)
    const results = await buildImages({
      socketPath: config.containers.dockerSocket,
      only: only as ImageKind | undefined,
      rebuild: ctx.values.rebuild === true,
      mirror: ctx.values.mirror as string | undefined,
      cacheDir: join(config.server.dataDir, 'cache', 'debian'),
      env: ctx.env,
      progress: (line) => ctx.out.info(line),
    })
    ctx.out.result(results, () => table(results))
    return 0
  },
}
