import { Type as t, type Static } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { ContainerRuntime, ExecResult } from './types'

/**
 * Berth's side of the supervisor in berth/app:1 (`berth-supervise`, image-app.ts): each call is
 * one verb run through the runtime's exec as the site user, answering one JSON line, checked
 * here; an answer that does not read is an AppControlError, as is a refusal (`ok: false`).
 */
export interface AppControl {
  /** The site's variables into the container's /tmp (tmpfs); running processes restart without dropping a request. */
  pushEnv(slug: string, env: Record<string, string>): Promise<{ restarted: string[]; port: number | null }>
  /** Starts the release in `releaseDir` beside the live one and switches once it answers (see SwitchResult). */
  switchRelease(slug: string, releaseDir: string, timeoutS: number): Promise<SwitchResult>
  /**
   * The web processes switched out (by a switch or a settings push) stopped, once no connection
   * to them is open: Berth calls it after its edge moved to the new port. Answers at once.
   */
  retire(slug: string): Promise<void>
  /** What runs; null when the container is not an app container, is not running, or does not answer. */
  status(slug: string): Promise<AppStatus | null>
  /** Hears the supervisor's events (pushes, process states) until `close()`; reconnects when the container restarts. */
  watch(slug: string, onEvent: (e: AppEvent) => void): { close(): void }
  /** Appends to a push's log, which the waiting pre-receive hook prints to the pusher. */
  pushLog(slug: string, id: string, text: string): Promise<void>
  /** Ends a push: the hook prints `message` and accepts (ok) or rejects the push. */
  pushDone(slug: string, id: string, ok: boolean, message: string): Promise<void>
}

const Process = t.Object({
  name: t.String(),
  state: t.Union([t.Literal('starting'), t.Literal('running'), t.Literal('backoff'), t.Literal('crashing'), t.Literal('stopped')]),
  pid: t.Union([t.Integer(), t.Null()]),
  restarts: t.Integer(),
  last_exit_code: t.Union([t.Integer(), t.Null()]),
  since: t.Union([t.String(), t.Null()]),
})
const Status = t.Object({
  release: t.Union([t.String(), t.Null()]),
  runtime: t.Union([t.String(), t.Null()]),
  env: t.Boolean(),
  processes: t.Array(Process),
  /** The live web's port in the container (the edge connects to it), null without one; absent from an older image. */
  port: t.Optional(t.Union([t.Integer(), t.Null()])),
})
const Switched = t.Union([
  t.Object({ ok: t.Literal(true), ms: t.Integer(), port: t.Optional(t.Union([t.Integer(), t.Null()])) }),
  t.Object({ ok: t.Literal(false), error: t.String(), exit_code: t.Optional(t.Union([t.Integer(), t.Null()])), output: t.Optional(t.String()) }),
])
const EnvAnswer = t.Object({ ok: t.Literal(true), restarted: t.Array(t.String()), port: t.Optional(t.Union([t.Integer(), t.Null()])) })
const Refusal = t.Object({ ok: t.Literal(false), error: t.String() })
const Ok = t.Object({ ok: t.Literal(true) })
const Event = t.Union([
  t.Object({ event: t.Literal('push'), id: t.String(), ref: t.String(), commit: t.String(), dir: t.String() }),
  t.Object({ event: t.Literal('process'), name: t.String(), state: Process.properties.state, restarts: t.Integer(), last_exit_code: t.Union([t.Integer(), t.Null()]) }),
])

export type AppProcess = Static<typeof Process>
export type AppStatus = Static<typeof Status>
/** `ok: false`: nothing changed, the previous release still serves; `error` says why, `output` is the new web's last 40 lines. */
export type SwitchResult = Static<typeof Switched>
export type AppEvent = Static<typeof Event>

const checks = {
  status: TypeCompiler.Compile(Status),
  switched: TypeCompiler.Compile(Switched),
  env: TypeCompiler.Compile(EnvAnswer),
  refusal: TypeCompiler.Compile(Refusal),
  ok: TypeCompiler.Compile(Ok),
  event: TypeCompiler.Compile(Event),
}

/** The supervisor refused (its `error`, in words an agent can act on) or answered something unreadable. */
export class AppControlError extends Error {
  constructor(message: string, readonly refused: boolean) {
    super(message)
  }
}

const SUPERVISE = '/usr/local/bin/berth-supervise'
/** A verb's own work is short; switch and env wait for health checks and add their own time. */
const VERB_MS = 30_000
/** How long a watch's exec runs before it is opened again (the exec API needs a bound). */
const WATCH_MS = 24 * 3600_000
const WATCH_RETRY_MS = 2_000

/** The supervisor's answer: the last line of the output that is JSON (the exec's output is stdout and stderr together). */
function answerOf<T>(result: ExecResult, check: { Check(v: unknown): v is T }, verb: string): T {
  const line = result.output.trim().split('\n').reverse().find((l) => l.startsWith('{'))
  let value: unknown
  try {
    value = line === undefined ? undefined : JSON.parse(line)
  } catch {
    value = undefined
  }
  if (check.Check(value)) return value
  const refusal: unknown = value
  if (checks.refusal.Check(refusal)) throw new AppControlError(refusal.error, true)
  throw new AppControlError(`berth-supervise ${verb} answered what Berth cannot read (exit ${result.exitCode}): ${result.output.trim().slice(-300)}`, false)
}

export function appControl(runtime: Pick<ContainerRuntime, 'exec'>): AppControl {
  const run = (slug: string, argv: string[], opts: { stdin?: string; timeoutMs?: number } = {}) =>
    runtime.exec(slug, [SUPERVISE, ...argv], { timeoutMs: opts.timeoutMs ?? VERB_MS, stdin: opts.stdin })
  return {
    async pushEnv(slug, env) {
      const answer = answerOf(await run(slug, ['env'], { stdin: JSON.stringify(env), timeoutMs: VERB_MS + 60_000 }), checks.env, 'env')
      return { restarted: answer.restarted, port: answer.port ?? null }
    },
    async retire(slug) {
      answerOf(await run(slug, ['retire'], { timeoutMs: 10_000 }), checks.ok, 'retire')
    },
    async switchRelease(slug, releaseDir, timeoutS) {
      const result = await run(slug, ['switch', releaseDir, '--timeout', String(timeoutS)], { timeoutMs: VERB_MS + timeoutS * 1000 })
      return answerOf(result, checks.switched, 'switch')
    },
    async status(slug) {
      try {
        return answerOf(await run(slug, ['status'], { timeoutMs: 10_000 }), checks.status, 'status')
      } catch {
        return null
      }
    },
    watch(slug, onEvent) {
      const stop = new AbortController()
      const loop = async () => {
        while (!stop.signal.aborted) {
          let pending = ''
          const onOutput = (chunk: string) => {
            pending += chunk
            let at
            while ((at = pending.indexOf('\n')) >= 0) {
              const line = pending.slice(0, at)
              pending = pending.slice(at + 1)
              let value: unknown
              try {
                value = JSON.parse(line)
              } catch {
                continue
              }
              if (checks.event.Check(value)) onEvent(value)
            }
          }
          try {
            await runtime.exec(slug, [SUPERVISE, 'watch'], { timeoutMs: WATCH_MS, maxOutputBytes: 1, onOutput, signal: stop.signal })
          } catch {
            // Not running now (stopped, restarting, the engine away): try again shortly.
          }
          if (!stop.signal.aborted) await Bun.sleep(WATCH_RETRY_MS)
        }
      }
      void loop()
      return { close: () => stop.abort() }
    },
    async pushLog(slug, id, text) {
      answerOf(await run(slug, ['push-log', id], { stdin: text }), checks.ok, 'push-log')
    },
    async pushDone(slug, id, ok, message) {
      answerOf(await run(slug, ['push-done', id, ok ? 'ok' : 'failed', message]), checks.ok, 'push-done')
    },
  }
}
