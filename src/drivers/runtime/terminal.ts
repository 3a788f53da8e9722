import { randomBytes } from 'node:crypto'
import type Docker from 'dockerode'
import type { StartInSite, StartedProcess } from './processes'
import { SITE_USER } from './site-container'
import type { Terminal, TerminalSpec } from './types'

/** Who a terminal runs as: the site user, or root (uid 0, with no capability: the container drops them all). */
const USERS = { site: SITE_USER, root: '0:0' } as const
/** HOME of a root terminal. */
const ROOT_HOME = '/root'

/** The variable that marks every process of one terminal, so `close()` finds them inside the container. */
const MARK = 'BERTH_TERMINAL'

/** How long `close()` lets the session's processes end on SIGHUP before SIGKILL. */
const HANGUP_GRACE_S = 1

/**
 * Kills one terminal's processes, run inside the container as the terminal's own user (the
 * container drops every capability, so root could neither read a site user's /proc/N/environ
 * nor signal it; the same uid can). `$1` is the mark's value. The targets are the sessions led
 * by a marked process (the TTY exec is a session leader: its shell's jobs each have a process
 * group of their own, all in that session) and every other marked process (one that left by
 * `setsid` keeps its environment). SIGHUP first, as a hung-up terminal does, then SIGKILL for
 * what is left after HANGUP_GRACE_S. Only `sh`, `cat`, `tr`, `grep` and `sleep`: busybox and
 * Debian both have them; no procps.
 */
const KILL_SESSION = `
mark="${MARK}=$1"
fields() { s=$(cat "$1/stat" 2>/dev/null) || return 1; s=\${s##*) }; echo "$s"; }
marked() { tr '\\000' '\\n' < "$1/environ" 2>/dev/null | grep -qxF "$mark"; }
sids=" "
for d in /proc/[0-9]*; do
  marked "$d" || continue
  f=$(fields "$d") || continue; set -- $f
  [ "$4" = "\${d#/proc/}" ] && sids="$sids$4 "
done
targets() {
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}; [ "$p" = "$$" ] && continue
    f=$(fields "$d") || continue; set -- $f
    [ "$1" = Z ] && continue
    case "$sids" in *" $4 "*) echo "$p"; continue;; esac
    marked "$d" && echo "$p"
  done
}
t=$(targets); [ -z "$t" ] && exit 0
kill -HUP $t 2>/dev/null
i=0
while [ $i -lt ${HANGUP_GRACE_S * 10} ]; do
  sleep 0.1; t=$(targets); [ -z "$t" ] && exit 0; i=$((i + 1))
done
kill -KILL $t 2>/dev/null
exit 0
`

/** ContainerRuntime.openTerminal over `start` (contract in ./types.ts). */
export async function openTerminal(start: StartInSite, slug: string, spec: TerminalSpec): Promise<Terminal> {
  const mark = randomBytes(12).toString('hex')
  const user = USERS[spec.user]
  // Root's home is /root, never the site's (the container's HOME): a shell as root reads no file
  // of the tenant's as its own (~/.bashrc, ~/.profile). ENV (what an interactive POSIX sh reads) is
  // emptied for the same reason.
  const own = spec.user === 'root' ? { HOME: ROOT_HOME, ENV: '' } : {}
  const env = { ...spec.env, ...own, TERM: 'xterm-256color', [MARK]: mark }
  const options: Docker.ExecCreateOptions = {
    Cmd: spec.argv,
    Tty: true,
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    User: user,
    WorkingDir: spec.cwd,
    Env: Object.entries(env).map(([name, value]) => `${name}=${value}`),
  }
  const session = await start(slug, options, (p) => new TerminalSession(p))
  // Engine API 1.42 takes the size at the create (ConsoleSize); before that (Debian 12's 20.10
  // speaks 1.41) it can only be set once the process runs. Right after the start, the shell has
  // not printed its first prompt yet, so `stty size` is right from there on.
  await session.resize(spec.cols, spec.rows).catch(() => {})
  session.killer = () => killSession(start, slug, user, mark)
  return session
}

/** One terminal: the exec's raw stream (a TTY multiplexes nothing) and its end. */
class TerminalSession implements Terminal {
  readonly exited: Promise<number | null>
  killer: () => Promise<void> = async () => {}
  private listener: ((bytes: Uint8Array) => void) | null = null
  /** Output that came before anyone listened (the first prompt can). */
  private early: Uint8Array[] = []
  private closing: Promise<void> | null = null
  private readonly run: Docker.Exec
  private readonly stream: NodeJS.ReadWriteStream

  constructor(p: StartedProcess) {
    this.run = p.run
    this.stream = p.stream
    this.stream.on('data', (chunk: Buffer) => {
      const bytes = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)
      if (this.listener) this.listener(bytes)
      else this.early.push(bytes)
    })
    const ended = new Promise<void>((done) => {
      this.stream.on('end', done)
      this.stream.on('close', done)
      this.stream.on('error', () => done())
    })
    this.exited = ended.then(() => this.exitCode())
  }

  onData(listener: (bytes: Uint8Array) => void): void {
    this.listener = listener
    for (const bytes of this.early.splice(0)) listener(bytes)
  }

  write(bytes: Uint8Array | string): boolean {
    if (this.closing) return true
    return this.stream.write(typeof bytes === 'string' ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
  }

  get pendingInput(): number {
    return (this.stream as unknown as { writableLength?: number }).writableLength ?? 0
  }

  onWritable(listener: () => void): void {
    this.stream.on('drain', listener)
  }

  pause(): void {
    this.stream.pause()
  }

  resume(): void {
    this.stream.resume()
  }

  resize(cols: number, rows: number): Promise<void> {
    return this.run.resize({ w: cols, h: rows }).then(() => {})
  }

  close(): Promise<void> {
    this.closing ??= this.hangUp()
    return this.closing
  }

  private async hangUp(): Promise<void> {
    // A container that stopped meanwhile took the processes with it: nothing left to kill.
    await this.killer().catch(() => {})
    this.stream.end()
    await Promise.race([this.exited, Bun.sleep(2000)])
    ;(this.stream as unknown as { destroy?: () => void }).destroy?.()
  }

  /** The exit code once the stream ended: null when closed, or when the engine cannot say. */
  private async exitCode(): Promise<number | null> {
    if (this.closing) return null
    try {
      // The stream can end a moment before the engine records the exit.
      for (let i = 0; i < 50; i++) {
        const state = await this.run.inspect()
        if (!state.Running && state.ExitCode !== null) return this.closing ? null : state.ExitCode
        await Bun.sleep(10)
      }
    } catch {}
    return null
  }
}

/** Runs KILL_SESSION for the terminal marked `mark` as `user`, and waits for it to finish. */
async function killSession(start: StartInSite, slug: string, user: string, mark: string): Promise<void> {
  const options = { Cmd: ['sh', '-c', KILL_SESSION, 'kill-session', mark], User: user, AttachStdout: true, AttachStderr: true, Tty: true }
  const finished = await start(slug, options, ({ stream }) => new Promise<void>((done) => {
    stream.on('data', () => {})
    stream.on('end', done)
    stream.on('close', done)
    stream.on('error', () => done())
  }))
  await finished
}
