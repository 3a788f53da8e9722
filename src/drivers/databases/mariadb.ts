import { clamp, DATA_MOUNT, identifier, sqlLiteral, START_HEAD, type EngineKit } from './kit'

const DATA = `${DATA_MOUNT}/mysql`
const SOCKET = '/run/mysqld/mysqld.sock'

/**
 * mariadb-install-db on first start (into a scratch folder renamed when complete), the
 * administrator `root` by unix_socket authentication only (no password, no network login), the
 * server started with --no-defaults: Debian's my.cnf would bind it to 127.0.0.1 and log to
 * /var/log; everything it needs is on its command line.
 */
const START = `${START_HEAD}DATA=${DATA}
install -d -m 0755 -o mysql -g mysql /run/mysqld
if [ ! -d "$DATA/mysql" ]; then
  rm -rf "$DATA.init"
  install -d -m 0700 -o mysql -g mysql "$DATA.init"
  mariadb-install-db --no-defaults --user=mysql --datadir="$DATA.init" --auth-root-authentication-method=socket --skip-test-db --skip-name-resolve >/tmp/install-db.log 2>&1 || { cat /tmp/install-db.log >&2; exit 1; }
  mv "$DATA.init" "$DATA"
fi
exec mariadbd --no-defaults --user=mysql --datadir="$DATA" --socket=${SOCKET} --pid-file=/run/mysqld/mysqld.pid "$@"
`

const admin = (stdin: string) => ({ cmd: ['mariadb', `--socket=${SOCKET}`, '-u', 'root'], stdin })
const account = (user: string) => `'${identifier(user)}'@'%'`

export const mariadbKit: EngineKit = {
  engine: 'mariadb',
  port: 3306,
  base: { suite: 'bookworm', arch: 'amd64', include: ['mariadb-server', 'mariadb-client'], cleanup: 1 },
  baseRepo: 'berth/mariadb-base',
  startScript: START,
  stopSignal: 'SIGTERM',
  /**
   * Two fifths of the memory for InnoDB's buffer pool (at least 32 MB), one connection slot per
   * 4 MB (25 to 300), small per-connection buffers, no performance schema (it takes 100 MB).
   */
  command(memoryMb) {
    return [
      '--port=3306',
      '--bind-address=0.0.0.0',
      '--skip-name-resolve',
      '--character-set-server=utf8mb4',
      '--collation-server=utf8mb4_unicode_ci',
      '--performance-schema=OFF',
      `--innodb-buffer-pool-size=${clamp((memoryMb * 2) / 5, 32, 1 << 20)}M`,
      `--max-connections=${clamp(memoryMb / 4, 25, 300)}`,
      '--key-buffer-size=8M',
      `--tmp-table-size=${clamp(memoryMb / 16, 8, 64)}M`,
      `--max-heap-table-size=${clamp(memoryMb / 16, 8, 64)}M`,
      '--max-allowed-packet=64M',
    ]
  },
  ready: () => ({ cmd: ['mariadb-admin', `--socket=${SOCKET}`, '-u', 'root', 'status'] }),
  provision(spec) {
    const name = identifier(spec.name)
    return admin(`CREATE DATABASE IF NOT EXISTS \`${name}\`;
CREATE USER IF NOT EXISTS ${account(spec.user)} IDENTIFIED BY ${sqlLiteral(spec.password)};
ALTER USER ${account(spec.user)} IDENTIFIED BY ${sqlLiteral(spec.password)};
GRANT ALL PRIVILEGES ON \`${name}\`.* TO ${account(spec.user)};
`)
  },
  probe: (spec) => ({
    cmd: ['mariadb', '-h', '127.0.0.1', '-P', '3306', '-u', identifier(spec.user), '--connect-timeout=5', '-N', '-B', '-e', 'SELECT VERSION()', identifier(spec.name)],
    env: [`MYSQL_PWD=${spec.password}`],
  }),
  versionOf: (out) => out.trim().match(/^(\d+\.\d+\.\d+)/)?.[1] ?? null,
  setPassword: (spec, password) => admin(`ALTER USER ${account(spec.user)} IDENTIFIED BY ${sqlLiteral(password)};\n`),
  dump: (spec) => ({ cmd: ['mariadb-dump', `--socket=${SOCKET}`, '-u', 'root', '--single-transaction', '--routines', '--events', '--triggers', '--hex-blob', identifier(spec.name)] }),
  /**
   * Loaded into a scratch database first; only a dump that loads whole replaces the database's
   * contents (MariaDB cannot rename a database: the scratch one is copied in, then dropped). A
   * broken dump leaves the data as it was.
   */
  restore(spec) {
    const name = identifier(spec.name)
    const scratch = `${name}__restore`
    const client = `mariadb --socket=${SOCKET} -u root`
    return {
      cmd: ['bash', '-c', `set -eu -o pipefail
${client} -e 'DROP DATABASE IF EXISTS \`${scratch}\`; CREATE DATABASE \`${scratch}\`'
if ! ${client} '${scratch}'; then ${client} -e 'DROP DATABASE \`${scratch}\`'; exit 1; fi
${client} -e 'DROP DATABASE IF EXISTS \`${name}\`; CREATE DATABASE \`${name}\`'
mariadb-dump --socket=${SOCKET} -u root --single-transaction --routines --events --triggers --hex-blob '${scratch}' | ${client} '${name}'
${client} -e 'DROP DATABASE \`${scratch}\`'`],
    }
  },
}
