import type Docker from 'dockerode'
import { PassThrough } from 'node:stream'

/** One command in a database's container (engine kits describe them; the runtime runs them). */
export interface DbExec {
  cmd: string[]
  /** `root` (default) or the server's own account (postgres's peer authentication). */
  user?: string
  /** Variables of this process only: a password for a client (PGPASSWORD, MYSQL_PWD, REDISCLI_AUTH), never in argv. */
  env?: string[]
  /** Written to the process's stdin, then closed: SQL that carries a password, or a dump to restore. */
  stdin?: string | NodeJS.ReadableStream
}

export interface DbExecResult {
  code: number
  /** Its stdout when no `to` took it, and its stderr: the last 64 KiB of each. */
  out: string
  err: string
  /** Bytes written to `to`. */
  bytes: number
}

const KEEP = 64 * 1024

/**
 * Runs `exec` in container `id` and waits for it to end. stdout goes to `to` when given (a
 * dump: streamed, with backpressure), else is kept; stdin is written and closed (a half-close of
 * the hijacked connection, which the engine turns into the process's end of input).
 */
export async function runIn(docker: Docker, id: string, exec: DbExec, to?: NodeJS.WritableStream): Promise<DbExecResult> {
  const run = await docker.getContainer(id).exec({
    Cmd: exec.cmd,
    User: exec.user ?? 'root',
    Env: exec.env ?? [],
    AttachStdout: true,
    AttachStderr: true,
    AttachStdin: exec.stdin !== undefined,
    Tty: false,
  })
  const stream = (await run.start({ hijack: true, stdin: exec.stdin !== undefined })) as unknown as NodeJS.ReadWriteStream
  const outSink = new PassThrough()
  const errSink = new PassThrough()
  let out = ''
  let err = ''
  let bytes = 0
  const keep = (s: string, chunk: Buffer) => (s + chunk.toString('utf8')).slice(-KEEP)
  errSink.on('data', (c: Buffer) => (err = keep(err, c)))
  if (to) {
    // Backpressure reaches the engine: a slow `to` pauses the connection itself, so a dump of
    // gigabytes is never held in memory.
    outSink.on('data', (c: Buffer) => {
      bytes += c.length
      if (!to.write(c)) {
        stream.pause()
        to.once('drain', () => stream.resume())
      }
    })
  } else {
    outSink.on('data', (c: Buffer) => (out = keep(out, c)))
  }
  const ended = new Promise<void>((resolve, reject) => {
    stream.on('end', resolve)
    stream.on('close', resolve)
    stream.on('error', reject)
  })
  docker.modem.demuxStream(stream, outSink, errSink)
  if (exec.stdin === undefined) {
    // nothing to write
  } else if (typeof exec.stdin === 'string') {
    stream.write(exec.stdin)
    stream.end()
  } else {
    void feed(stream, exec.stdin, ended)
  }
  await ended
  // The demultiplexer may still hold the last frame's bytes for a tick.
  await new Promise((resolve) => setImmediate(resolve))
  const { ExitCode } = await run.inspect()
  return { code: ExitCode ?? -1, out, err, bytes }
}

async function feed(stream: NodeJS.ReadWriteStream, from: NodeJS.ReadableStream, ended: Promise<void>): Promise<void> {
  let over = false
  void ended.then(() => (over = true), () => (over = true))
  try {
    for await (const chunk of from as AsyncIterable<Buffer | string>) {
      if (over) break
      if (!stream.write(chunk)) await Promise.race([new Promise((resolve) => stream.once('drain', resolve)), ended.catch(() => {})])
    }
  } catch {
    // The input failed: the command sees its input end early, and its exit status says so.
  } finally {
    if (!over) stream.end()
  }
}

/** Polls of `waitingFor`'s loop in the container, 20 ms apart: about three seconds a call. */
const READY_POLLS = 150

/**
 * `ready` polled inside the container every 20 ms, up to READY_POLLS times: one exec that answers
 * as soon as the server does, instead of an exec (a new process in the container and its round
 * trips to the engine) for every poll. Fails with the last poll's output when it is still not ready.
 */
export function waitingFor(ready: DbExec): DbExec {
  return { ...ready, cmd: ['sh', '-c', polled(ready.cmd.map(quoted).join(' '))] }
}

const quoted = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`

/** Shell that runs `line` every 20 ms until it exits 0, at most READY_POLLS times (exit 1 with its last output on stderr). */
const polled = (line: string) => `i=0; until out=$(${line} 2>&1 </dev/null); do i=$((i+1)); if [ "$i" -ge ${READY_POLLS} ]; then printf '%s\\n' "$out" >&2; exit 1; fi; sleep 0.02; done`

/** What startingUp's one exec found: not ready yet, ready but not provisioned, or provisioned and probed. */
export type StartingUp =
  | { stage: 'waiting'; last: string }
  | { stage: 'unprovisioned'; code: number; out: string; err: string }
  | { stage: 'probed'; provisioned: string; probe: DbExecResult }

/** Lines startingUp's script prints between its steps' outputs on stdout (never a server's output). */
const READY_MARK = '@@berth-ready@@'
const PROBE_MARK = '@@berth-probe@@'

/**
 * The readiness poll (waitingFor), the provisioning and the probe of a starting server in one
 * exec: each exec is a process in the container and three round trips to the engine (~50 ms
 * here), and a create waited for three. Provisioning reads the exec's input (its SQL, which holds
 * the password); each step's variables (the probe's password) are in the exec's environment under
 * other names (BERTH_PROBE_0...) and set under their own names for that step alone, never on a
 * command line (the other steps run in the same container as the same account, so they could read
 * them: nothing is hidden from them, only kept from clients that read the usual names). null when
 * the steps run as different accounts (then they run one by one). The result is read back with
 * `startedUp`; a probed result's `err` holds the provisioning's stderr too.
 */
export function startingUp(ready: DbExec, provision: DbExec, probe: DbExec): DbExec | null {
  const user = ready.user ?? 'root'
  if ((provision.user ?? 'root') !== user || (probe.user ?? 'root') !== user || typeof (provision.stdin ?? '') !== 'string') return null
  const carried = (prefix: string, env: string[] | undefined) => (env ?? []).map((pair, i) => {
    const at = pair.indexOf('=')
    const name = at < 0 ? pair : pair.slice(0, at)
    if (at < 0 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`'${name}' is not a NAME=value variable`)
    return { outer: `BERTH_${prefix}${i}=${pair.slice(at + 1)}`, assign: `${name}="$BERTH_${prefix}${i}"` }
  })
  const made = carried('PROVISION_', provision.env)
  const probed = carried('PROBE_', probe.env)
  const line = (exec: DbExec, env: { assign: string }[]) => [...env.map((e) => e.assign), ...exec.cmd.map(quoted)].join(' ')
  const script = [
    polled(ready.cmd.map(quoted).join(' ')),
    `echo '${READY_MARK}'`,
    `made=$(${line(provision, made)}); code=$?`,
    `printf '%s\\n' "$made"`,
    `[ "$code" -eq 0 ] || exit "$code"`,
    `echo '${PROBE_MARK}'`,
    `${line(probe, probed)} </dev/null`,
  ].join('\n')
  return { cmd: ['sh', '-c', script], user: ready.user, env: [...made, ...probed].map((e) => e.outer), stdin: provision.stdin ?? '' }
}

/** startingUp's result: how far it went, with each step's own output. */
export function startedUp(result: DbExecResult): StartingUp {
  const ready = result.out.indexOf(`${READY_MARK}\n`)
  if (ready < 0) return { stage: 'waiting', last: (result.err || result.out).trim() }
  const after = result.out.slice(ready + READY_MARK.length + 1)
  const probe = after.indexOf(`${PROBE_MARK}\n`)
  if (probe < 0) return { stage: 'unprovisioned', code: result.code, out: after, err: result.err }
  return { stage: 'probed', provisioned: after.slice(0, probe), probe: { ...result, out: after.slice(probe + PROBE_MARK.length + 1) } }
}
