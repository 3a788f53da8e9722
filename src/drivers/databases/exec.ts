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
  const line = ready.cmd.map((arg) => `'${arg.replaceAll("'", "'\\''")}'`).join(' ')
  const loop = `i=0; until out=$(${line} 2>&1); do i=$((i+1)); if [ "$i" -ge ${READY_POLLS} ]; then printf '%s\\n' "$out" >&2; exit 1; fi; sleep 0.02; done`
  return { ...ready, cmd: ['sh', '-c', loop] }
}
