import type { DbEngine } from '../../domain/databases'
import { makeTar, type TarEntry } from '../runtime/tar'
import { DATA_MOUNT, type EngineKit } from './kit'
import { mariadbKit } from './mariadb'
import { postgresKit } from './postgres'
import { redisKit } from './redis'

/** Every engine's kit, by engine. */
export const KITS: Record<DbEngine, EngineKit> = { postgres: postgresKit, mariadb: mariadbKit, redis: redisKit }

/** The database images Berth builds; config's containers.image_postgres/_mariadb/_redis name them by default. */
export const DB_IMAGES: Record<DbEngine, string> = { postgres: 'berth/postgres:1', mariadb: 'berth/mariadb:1', redis: 'berth/redis:1' }

/**
 * A database image on its engine's Debian base: the start script (and the engine's helpers).
 * The container runs as root only for berth-db-start, which becomes the server's own account;
 * the runtime drops every capability but those that needs. Port exposed for documentation only:
 * nothing is ever published on the host.
 */
export function dbDockerfile(kit: EngineKit, baseTag: string): string {
  return `FROM ${baseTag}
ADD rootfs.tar /
EXPOSE ${kit.port}
VOLUME ${DATA_MOUNT}
STOPSIGNAL ${kit.stopSignal}
ENTRYPOINT ["/usr/local/bin/berth-db-start"]
CMD []
`
}

/** The build context of the engine's image (a tar: Dockerfile and rootfs.tar). */
export function dbContext(kit: EngineKit, baseTag: string): Uint8Array {
  const files: TarEntry[] = [
    { type: 'file', path: 'usr/local/bin/berth-db-start', data: kit.startScript, mode: 0o755 },
    ...Object.entries(kit.tools ?? {}).map(([path, data]): TarEntry => ({ type: 'file', path, data, mode: 0o755 })),
  ]
  return makeTar([
    { type: 'file', path: 'Dockerfile', data: dbDockerfile(kit, baseTag) },
    { type: 'file', path: 'rootfs.tar', data: makeTar(files) },
  ])
}
