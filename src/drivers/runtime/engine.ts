import type Docker from 'dockerode'
import { connect as connectUnix, isIP, type Socket } from 'node:net'
import { connect as connectTls } from 'node:tls'
import type { EngineConnection, EngineSocket } from '../cluster/types'
import { RuntimeUnavailableError } from './types'

/**
 * Where an engine answers: a Unix socket path (this box's), or a node's engine as the cluster's
 * NodeLink gives it (over mutual TLS through the node's agent, or a Unix socket in tests).
 */
export type EngineAddress = string | EngineSocket | EngineConnection

/** dockerode's options for `address`. */
export function dockerOptions(address: EngineAddress): Docker.DockerOptions {
  if (typeof address === 'string') return { socketPath: address }
  if ('socketPath' in address) return { socketPath: address.socketPath }
  const { protocol, host, port, ca, cert, key, checkServerIdentity } = address
  return { protocol, host, port, ca, cert, key, checkServerIdentity } as Docker.DockerOptions
}

/** A name for `address` in messages: the socket path, or host:port. */
export function describeEngine(address: EngineAddress): string {
  if (typeof address === 'string') return address
  return 'socketPath' in address ? address.socketPath : `${address.host}:${address.port}`
}

/** A raw connection to the engine at `address` (for EngineLink); 'ready' once HTTP can be written. */
export function connectEngine(address: EngineAddress): { socket: Socket; ready: 'connect' | 'secureConnect' } {
  if (typeof address === 'string') return { socket: connectUnix({ path: address }), ready: 'connect' }
  if ('socketPath' in address) return { socket: connectUnix({ path: address.socketPath }), ready: 'connect' }
  const { host, port, ca, cert, key, checkServerIdentity } = address
  // SNI takes names only; a node is usually known by its address.
  const socket = connectTls({ host, port, ca, cert, key, ...(isIP(host) ? {} : { servername: host }), checkServerIdentity: checkServerIdentity as never })
  return { socket, ready: 'secureConnect' }
}

/**
 * Socket errors that mean the engine is not there: connecting failed (not started, socket
 * missing, no permission), or the connection broke mid-request (the engine restarted). Only
 * connect errors count for ENOENT and EACCES, which file operations raise too.
 */
const CONNECT_ERRORS = new Set(['ECONNREFUSED', 'ENOENT', 'EACCES'])
const BROKEN_CONNECTION = new Set(['ECONNRESET', 'EPIPE'])

/**
 * A Docker API client on a Unix socket (or any EngineAddress); `timeoutMs` bounds every request (builds excepted: pass 0).
 * dockerode is imported here, on first use, not at start-up: with the gRPC and SSH stacks it
 * brings, loading it doubled Berth's start-up time (bench/, issue 2's start-up figure).
 */
export async function openEngine(address: EngineAddress, timeoutMs = 60_000): Promise<Docker> {
  const { default: DockerClient } = await import('dockerode')
  const timeout = timeoutMs > 0 ? { timeout: timeoutMs } : {}
  if (typeof address === 'string' || 'socketPath' in address) return new DockerClient({ ...dockerOptions(address), ...timeout })
  return overTcp(new DockerClient({ ...dockerOptions(address), host: undefined, socketPath: describeEngine(address), ...timeout }), address)
}

/**
 * Sends the client's requests to the node's `host:port` instead of its socket path. Given a
 * `host`, docker-modem runs every request through Node's legacy `url.parse()`, which a compiled
 * binary (no node_modules in its paths) reports once per process as DEP0169 on stderr: `berth
 * sites move` printed it (issue 36). Made as a socket client (no `url.parse()`: the path is used as
 * built) and each request given the node's address here, with the same TLS options.
 */
function overTcp(docker: Docker, { host, port }: EngineConnection): Docker {
  type BuildRequest = (options: Record<string, unknown>, ...rest: unknown[]) => void
  const modem = docker.modem as unknown as { buildRequest: BuildRequest }
  const buildRequest = modem.buildRequest.bind(modem)
  modem.buildRequest = (options, ...rest) => {
    const { socketPath: _, ...request } = options
    buildRequest({ ...request, hostname: host, port }, ...rest)
  }
  return docker
}

/** The HTTP status the engine answered with, when the error is an engine answer. */
export function statusOf(err: unknown): number | undefined {
  const status = (err as { statusCode?: unknown } | null)?.statusCode
  return typeof status === 'number' ? status : undefined
}

export const isNotFound = (err: unknown) => statusOf(err) === 404

/** Runs `fn`, turning "the engine is down" socket errors into RuntimeUnavailableError. */
export async function engineCall<T>(address: EngineAddress, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    throw asUnavailable(address, err) ?? err
  }
}

/** The RuntimeUnavailableError for `err`, or undefined when the engine did answer. */
export function asUnavailable(address: EngineAddress, err: unknown): RuntimeUnavailableError | undefined {
  const { code, syscall } = (err ?? {}) as { code?: unknown; syscall?: unknown }
  if (statusOf(err) !== undefined || typeof code !== 'string') return undefined
  if (!BROKEN_CONNECTION.has(code) && !(CONNECT_ERRORS.has(code) && syscall === 'connect')) return undefined
  return new RuntimeUnavailableError(`The Docker engine at ${describeEngine(address)} is not answering (${code}); start it (systemctl start docker) and retry.`, { cause: err })
}

/** Resolves null when the engine answers 404, else passes the result or error through. */
export async function orNull<T>(promise: Promise<T>): Promise<T | null> {
  try {
    return await promise
  } catch (err) {
    if (isNotFound(err)) return null
    throw err
  }
}

/** Runs `promise`, ignoring the statuses listed (404 on a removal, 304 on a stop). */
export async function ignoring(statuses: number[], promise: Promise<unknown>): Promise<void> {
  try {
    await promise
  } catch (err) {
    const status = statusOf(err)
    if (status === undefined || !statuses.includes(status)) throw err
  }
}

/**
 * Waits for a streamed engine operation (build, import) and throws the first error it reports;
 * the engine answers 200 and then reports build failures inside the stream. `onEvent` sees each
 * progress object.
 */
export function followStream(docker: Docker, stream: NodeJS.ReadableStream, onEvent?: (event: Record<string, unknown>) => void): Promise<Record<string, unknown>[]> {
  return new Promise((done, fail) => {
    // modem.followProgress, not docker.followProgress: the latter loads BuildKit's protobuf
    // schema from a file path, which a compiled binary does not have.
    docker.modem.followProgress(
      stream,
      (err: Error | null, events: Record<string, unknown>[]) => {
        if (err) return fail(err)
        const failed = events.find((e) => e.error || e.errorDetail)
        if (failed) return fail(new Error(String(failed.error ?? (failed.errorDetail as { message?: string }).message)))
        done(events)
      },
      onEvent,
    )
  })
}
