import { clamp, DATA_MOUNT, identifier, START_HEAD, type EngineKit } from './kit'

const DIR = `${DATA_MOUNT}/redis`

/**
 * Redis keeps its users in an ACL file on its disk: `default` off, the site's user (made by
 * provision), and `berth`, the administrator, whose password is made at first start into a file
 * only root reads (berth-redis-admin uses it). Persistence: RDB snapshots (Redis's defaults).
 */
const START = `${START_HEAD}DIR=${DIR}
install -d -m 0700 -o redis -g redis "$DIR"
if [ ! -s "$DIR/admin.pass" ]; then
  (tr -dc 'A-Za-z0-9' </dev/urandom || true) | head -c 32 > "$DIR/admin.pass.new"
  chmod 0600 "$DIR/admin.pass.new"
  mv "$DIR/admin.pass.new" "$DIR/admin.pass"
  rm -f "$DIR/users.acl"
fi
if [ ! -s "$DIR/users.acl" ]; then
  printf 'user default off\\nuser berth on >%s ~* &* +@all\\n' "$(cat "$DIR/admin.pass")" > "$DIR/users.acl"
  chown redis:redis "$DIR/users.acl"
  chmod 0600 "$DIR/users.acl"
fi
exec setpriv --reuid=redis --regid=redis --init-groups redis-server --dir "$DIR" --aclfile "$DIR/users.acl" "$@"
`

/** redis-cli as the administrator (in the container only; loopback). */
const ADMIN = `#!/bin/sh
REDISCLI_AUTH="$(cat ${DIR}/admin.pass)" exec redis-cli --no-auth-warning --user berth -h 127.0.0.1 -p 6379 "$@"
`

/** The site's user: everything but the administrator's commands (CONFIG, ACL changes, DEBUG, SHUTDOWN...). */
const setUser = (user: string, password: string) => `ACL SETUSER ${identifier(user)} on resetpass >${password} ~* &* +@all -@admin\nACL SAVE\n`

/** Every reply line of a batch is OK: redis-cli exits 0 after an error reply, so the runtime checks this. */
export const allOk = (out: string) => out.trim().split('\n').every((line) => line.trim() === 'OK')

export const redisKit: EngineKit = {
  engine: 'redis',
  port: 6379,
  base: { suite: 'bookworm', arch: 'amd64', include: ['redis-server'], cleanup: 1 },
  baseRepo: 'berth/redis-base',
  startScript: START,
  tools: { 'usr/local/bin/berth-redis-admin': ADMIN },
  stopSignal: 'SIGTERM',
  /** Three quarters of the memory for data (maxmemory, no eviction: a database, not a cache, unless the site changes it), the rest for the server. */
  command(memoryMb) {
    return [
      '--port', '6379',
      '--bind', '0.0.0.0',
      '--protected-mode', 'no',
      '--daemonize', 'no',
      '--maxmemory', `${clamp((memoryMb * 3) / 4, 16, 1 << 20)}mb`,
      '--maxmemory-policy', 'noeviction',
      '--appendonly', 'no',
      '--save', '3600 1 300 100 60 10000',
      // A dump (redis-cli --rdb) is a replica's sync: without this the server waits 5 s for more
      // replicas before it forks, and a site's backup is frozen that long (domain/archives/dumps.ts).
      '--repl-diskless-sync-delay', '0',
      '--enable-debug-command', 'local',
    ]
  },
  ready: () => ({ cmd: ['sh', '-c', '[ "$(berth-redis-admin PING)" = PONG ]'] }),
  provision: (spec) => ({ cmd: ['berth-redis-admin'], stdin: setUser(spec.user, spec.password) }),
  probe: (spec) => ({
    cmd: ['redis-cli', '--no-auth-warning', '--user', identifier(spec.user), '-h', '127.0.0.1', '-p', '6379', 'INFO', 'server'],
    env: [`REDISCLI_AUTH=${spec.password}`],
  }),
  versionOf: (out) => out.match(/redis_version:(\d+\.\d+\.\d+)/)?.[1] ?? null,
  setPassword: (spec, password) => ({ cmd: ['berth-redis-admin'], stdin: setUser(spec.user, password) }),
  dump: () => ({ cmd: ['berth-redis-admin', '--rdb', '-'] }),
  /**
   * The RDB file, once redis-check-rdb finds it whole, replaces the server's, which then loads it
   * (DEBUG RELOAD NOSAVE, allowed from loopback only). Checked first: Redis exits on a corrupt
   * RDB, and the file in place would keep it from starting again.
   */
  restore: () => ({
    cmd: ['bash', '-c', `set -eu
cat > ${DIR}/restore.rdb
if ! redis-check-rdb ${DIR}/restore.rdb > /tmp/check-rdb.log 2>&1; then tail -n 5 /tmp/check-rdb.log >&2; rm -f ${DIR}/restore.rdb; exit 1; fi
chown redis:redis ${DIR}/restore.rdb
mv ${DIR}/restore.rdb ${DIR}/dump.rdb
[ "$(berth-redis-admin DEBUG RELOAD NOSAVE)" = OK ]`],
  }),
}
