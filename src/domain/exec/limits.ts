/**
 * Limits of the exec API (`POST /sites/{tenant_slug}/exec/`, docs/api.md "Exec"). The issue's:
 * stdin up to 1 MiB, each output stream kept to its last 1 MiB, a timeout of 1 to 900 seconds (60
 * by default), two execs at once per site. The rest are Berth's, under what Linux takes (an
 * argument or variable of at most 128 KiB, MAX_ARG_STRLEN) and small enough that one request
 * cannot hold much memory.
 */
export const EXEC_LIMITS = {
  /** `stdin`, in UTF-8 bytes. */
  stdinBytes: 1_048_576,
  /** Each of stdout and stderr keeps its last this-many bytes. */
  keepBytes: 1_048_576,
  timeoutSeconds: { minimum: 1, maximum: 900, default: 60 },
  /** Execs running at once in one site; one more answers 429 with Retry-After. */
  perSite: 2,
  /** The command in UTF-8 bytes: the string, or the argv's items together. */
  commandBytes: 131_072,
  /** Items of an argv command. */
  argvItems: 1_024,
  /** Variables in `env`. */
  envCount: 64,
  /** A variable's name, in bytes. */
  envNameBytes: 128,
  /** Names and values of `env` together, in UTF-8 bytes. */
  envBytes: 65_536,
  /** Retry-After of a 429 is the time until the first running exec's timeout, at most this. */
  retryAfterSeconds: 5,
} as const

/** Room in a body for the field names, `cwd` and a JSON encoder's whims. */
const BODY_SLACK = 64 * 1024

/**
 * The body limit of the exec route, above `server.max_body_bytes`: JSON may escape a byte of
 * text as six (`\u001f`), so six times what stdin, the command and env may hold, and slack (about
 * 7.5 MB). Past it the body parser answers 413 before reading further; within it, the service
 * checks each field's size exactly and answers naming the field.
 */
export const EXEC_BODY_LIMIT = { bytes: 6 * (EXEC_LIMITS.stdinBytes + EXEC_LIMITS.commandBytes + EXEC_LIMITS.envBytes) + BODY_SLACK, param: 'stdin' } as const

const EXEC_ROUTE = /^\/api\/v1\/sites\/[^/]+\/exec\/?$/

/** The body limit of the route at `path`, when it is the exec route. */
export function execBodyLimit(path: string): { bytes: number; param: string } | undefined {
  return EXEC_ROUTE.test(path) ? EXEC_BODY_LIMIT : undefined
}
