import type Docker from 'dockerode'
import { PassThrough } from 'node:stream'
import { SITE_HOME, SITE_USER } from './site-container'
import { statusOf } from './engine'
import { SiteNotRunnableError, SiteRestartingError, type ExecOptions, type ExecResult } from './types'

/** A process just started in a site's container: the engine's exec and its hijacked stream. */
export interface StartedProcess {
  run: Docker.Exec
  /** Both ways: the process's input, and its output (multiplexed without a TTY, raw with one). */
  stream: NodeJS.ReadWriteStream
  docker: Docker
}

/**
 * Starts a process (the engine's exec, created with `options`) in a site's running container.
 * `attach` gets its stream at once, before anything else is awaited: a short command can be
 * over, its stream ended, by the time its start is confirmed. Resolves with what `attach`
 * returned once the process exists. The check, the create and the start run under the site's
 * lock (a freeze waits, and waits for them), and errors of a down engine are
 * RuntimeUnavailableError; SiteNotRunnableError when the container does not run. Every door that
 * runs something in a container (exec, runCommand, openTerminal) starts it here.
 */
export type StartInSite = <T>(slug: string, options: Docker.ExecCreateOptions, attach: (p: StartedProcess) => T) => Promise<T>

/** ContainerRuntime.exec over `start` (contract in ./types.ts). */
export async function execBounded(start: StartInSite, slug: string, cmd: string[], opts: ExecOptions): Promise<ExecResult> {
  const timeoutS = Math.max(1, Math.ceil((opts.timeoutMs ?? 60_000) / 1000))
  const max = opts.maxOutputBytes ?? 64 * 1024
  // Only the start is under the site's lock: the command then runs unlocked, so a deploy hook of
  // minutes never holds up the reconciler's ensureSite, a stop or the next snapshot (which
  // freezes the command with the site). `timeout` exists in both images (busybox and coreutils)
  // and kills what the engine cannot.
  // An input (stdin, or a signal that ends it) needs the process's stdin attached; otherwise it is
  // empty, as before.
  const input = opts.stdin !== undefined || opts.signal !== undefined
  const env = opts.env ? { Env: Object.entries(opts.env).map(([name, value]) => `${name}=${value}`) } : {}
  const options = { Cmd: ['timeout', '-s', 'KILL', String(timeoutS), ...cmd], User: SITE_USER, WorkingDir: SITE_HOME, ...env, AttachStdin: input, OpenStdin: input, StdinOnce: input, AttachStdout: true, AttachStderr: true, Tty: false }
  const { run, finished, output } = await start(slug, options, ({ run, stream, docker }) => {
    const collected = collect(docker, stream, max, opts.onOutput)
    if (opts.stdin !== undefined) stream.write(typeof opts.stdin === 'string' ? Buffer.from(opts.stdin) : opts.stdin)
    // A half-close of the hijacked connection: the engine closes the process's stdin.
    if (!opts.signal) {
      if (input) stream.end()
    } else if (opts.signal.aborted) stream.end()
    else opts.signal.addEventListener('abort', () => stream.end(), { once: true })
    return { run, ...collected }
  })
  await finished
  const { ExitCode } = await run.inspect()
  return { exitCode: ExitCode ?? -1, output: output() }
}

/** Gathers an exec's demultiplexed output (at most `max` bytes); `finished` resolves at its end. */
function collect(docker: Docker, stream: NodeJS.ReadWriteStream, max: number, onOutput?: (chunk: string) => void): { finished: Promise<void>; output: () => string } {
  const chunks: Buffer[] = []
  let size = 0
  const sink = new PassThrough()
  const decoder = new TextDecoder()
  sink.on('data', (chunk: Buffer) => {
    onOutput?.(decoder.decode(chunk, { stream: true }))
    if (size < max) chunks.push(chunk.subarray(0, max - size))
    size += chunk.length
  })
  const finished = new Promise<void>((done, fail) => {
    stream.on('end', done)
    stream.on('close', done)
    stream.on('error', fail)
  })
  // Awaited by the caller once the start is confirmed; an error before then is not "unhandled".
  finished.catch(() => {})
  docker.modem.demuxStream(stream, sink, sink)
  return { finished, output: () => Buffer.concat(chunks).toString('utf8') }
}

/** How long a start keeps the site's lock waiting for its process to exist (it takes milliseconds). */
const EXEC_START_WAIT_MS = 10_000

/**
 * Resolves once the exec's process exists (it has a pid, or has already ended). The engine
 * answers `start` before runc has finished setting the process up; a freeze (snapshot) landing
 * in between left `runc init` frozen half-way, and with it the exec, the unpause and the
 * snapshot, for good (found by the hostile-input suite). Holding the site's lock until here keeps
 * freezes out of that window.
 */
export async function untilStarted(run: Docker.Exec): Promise<void> {
  const deadline = Date.now() + EXEC_START_WAIT_MS
  for (;;) {
    const state = await run.inspect()
    // Not `Running`: the engine sets it before asking runc to start the process; the pid comes after.
    if ((state.Pid ?? 0) > 0 || (!state.Running && state.ExitCode !== null)) return
    if (Date.now() > deadline) return
    await Bun.sleep(5)
  }
}

/**
 * The body of a StartInSite once the site's container is found (`info`, on the engine `docker`):
 * refuses a container that does not run or is frozen, starts the exec, hands its stream to
 * `attach` and resolves once the process exists. Both runtimes (docker.ts, swarm/) start here.
 */
export async function startInContainer<T>(docker: Docker, info: Docker.ContainerInspectInfo | null, slug: string, options: Docker.ExecCreateOptions, attach: (p: StartedProcess) => T): Promise<T> {
  // The engine counts a container waiting to be restarted as Running (with Restarting set).
  if (info?.State.Restarting) throw new SiteRestartingError(slug)
  if (!info?.State.Running || info.State.Paused) throw new SiteNotRunnableError(`The site '${slug}' is not running.`)
  let run: Docker.Exec
  let stream: NodeJS.ReadWriteStream
  try {
    run = await docker.getContainer(info.Id).exec(options)
    stream = await run.start({ hijack: true, stdin: options.AttachStdin === true, Tty: options.Tty === true })
  } catch (err) {
    // 409: the container stopped, froze or began restarting since it was inspected.
    if (statusOf(err) !== 409) throw err
    const now = await docker.getContainer(info.Id).inspect().catch(() => null)
    throw now?.State.Restarting ? new SiteRestartingError(slug) : new SiteNotRunnableError(`The site '${slug}' is not running.`)
  }
  const attached = attach({ run, stream, docker })
  await untilStarted(run)
  return attached
}
