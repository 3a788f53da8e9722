import type { DatabaseSpec } from '../../domain/databases'
import { clamp, DATA_MOUNT, identifier, sqlLiteral, START_HEAD, type EngineKit } from './kit'

const DATA = `${DATA_MOUNT}/pgdata`
const BIN = '/usr/lib/postgresql/15/bin'
const AS_PG = 'setpriv --reuid=postgres --regid=postgres --init-groups'

/**
 * initdb on first start (into a scratch folder renamed when complete, so a start killed mid-way
 * starts over), peer authentication for the `postgres` administrator on the Unix socket only,
 * scram-sha-256 for everyone else over TCP (the administrator has no password, so it cannot log
 * in over the network).
 */
const START = `${START_HEAD}DATA=${DATA}
install -d -m 0755 -o postgres -g postgres /run/postgresql
if [ ! -s "$DATA/PG_VERSION" ]; then
  rm -rf "$DATA.init"
  install -d -m 0700 -o postgres -g postgres "$DATA.init"
  ${AS_PG} ${BIN}/initdb -D "$DATA.init" -U postgres -E UTF8 --locale=C.UTF-8 --auth-local=peer --auth-host=scram-sha-256 >/dev/null
  mv "$DATA.init" "$DATA"
fi
printf 'local all postgres peer\\nhost all all 0.0.0.0/0 scram-sha-256\\nhost all all ::/0 scram-sha-256\\n' > "$DATA/pg_hba.conf"
chown postgres:postgres "$DATA/pg_hba.conf"
exec ${AS_PG} ${BIN}/postgres -D "$DATA" "$@"
`

const psqlAdmin = (db: string, stdin: string) => ({ cmd: ['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', db, '-f', '-'], user: 'postgres', stdin })

export const postgresKit: EngineKit = {
  engine: 'postgres',
  port: 5432,
  base: { suite: 'bookworm', arch: 'amd64', include: ['postgresql-15'], cleanup: 1 },
  baseRepo: 'berth/postgres-base',
  startScript: START,
  stopSignal: 'SIGINT',
  /**
   * A quarter of the memory for shared_buffers, three quarters as the planner's cache estimate,
   * one eighth of a megabyte per connection slot (20 to 200), work_mem so that a few sorts per
   * connection fit.
   */
  command(memoryMb) {
    const settings: Record<string, string> = {
      listen_addresses: '*',
      port: '5432',
      unix_socket_directories: '/run/postgresql',
      password_encryption: 'scram-sha-256',
      max_connections: String(clamp(memoryMb / 8, 20, 200)),
      shared_buffers: `${clamp(memoryMb / 4, 16, 1 << 20)}MB`,
      effective_cache_size: `${clamp((memoryMb * 3) / 4, 32, 1 << 20)}MB`,
      maintenance_work_mem: `${clamp(memoryMb / 16, 16, 2048)}MB`,
      work_mem: `${clamp(memoryMb / 128, 1, 256)}MB`,
      logging_collector: 'off',
    }
    return Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])
  },
  ready: () => ({ cmd: ['pg_isready', '-q', '-h', '/run/postgresql'], user: 'postgres' }),
  provision(spec) {
    const user = identifier(spec.user)
    const name = identifier(spec.name)
    return psqlAdmin('postgres', `DO $$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = ${sqlLiteral(user)}) THEN CREATE ROLE "${user}" LOGIN; END IF; END$$;
ALTER ROLE "${user}" WITH LOGIN PASSWORD ${sqlLiteral(spec.password)};
SELECT 'CREATE DATABASE "${name}" OWNER "${user}"' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = ${sqlLiteral(name)})\\gexec
REVOKE ALL ON DATABASE "${name}" FROM PUBLIC;
`)
  },
  probe: (spec) => ({
    cmd: ['psql', '-X', '-A', '-t', '-h', '127.0.0.1', '-p', '5432', '-U', identifier(spec.user), '-d', identifier(spec.name), '-c', 'SHOW server_version'],
    env: [`PGPASSWORD=${spec.password}`, 'PGCONNECT_TIMEOUT=5'],
    user: 'postgres',
  }),
  versionOf: (out) => out.trim().match(/^(\d+\.\d+)/)?.[1] ?? null,
  setPassword: (spec: DatabaseSpec, password: string) => psqlAdmin('postgres', `ALTER ROLE "${identifier(spec.user)}" WITH PASSWORD ${sqlLiteral(password)};\n`),
  dump: (spec) => ({ cmd: ['pg_dump', '-Fc', '-d', identifier(spec.name)], user: 'postgres' }),
  /**
   * Into a scratch database first (one transaction, stopping at the first error), which then
   * takes the database's place: a dump that fails to load leaves the data as it was.
   */
  restore(spec) {
    const name = identifier(spec.name)
    const user = identifier(spec.user)
    const scratch = `${name}__restore`
    const psql = `psql -X -q -v ON_ERROR_STOP=1 -d postgres`
    const script = [
      'set -eu',
      `${psql} -c 'DROP DATABASE IF EXISTS "${scratch}"' -c 'CREATE DATABASE "${scratch}" OWNER "${user}"'`,
      `pg_restore --exit-on-error --single-transaction --no-owner --role="${user}" -d "${scratch}"`,
      `${psql} -c 'DROP DATABASE IF EXISTS "${name}" WITH (FORCE)' -c 'ALTER DATABASE "${scratch}" RENAME TO "${name}"' -c 'REVOKE ALL ON DATABASE "${name}" FROM PUBLIC'`,
    ].join('\n')
    return { cmd: ['bash', '-c', script], user: 'postgres' }
  },
}
