import type { JoinAnswer, JoinRequest } from './types'

/** The join path on the control plane's API listener (api/cluster/join.ts CLUSTER_JOIN_PATH). */
const JOIN_PATH = '/cluster/v1/join'
const JOIN_TIMEOUT_MS = 30_000

/** The control plane refused the join: its envelope's code, message and field. */
export class JoinRefusedError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly param: string | null) {
    super(message)
  }
}

/** `berth node join URL`'s endpoint: URL as given when it names the path, else the path under it. */
export function joinEndpoint(url: string): string {
  const base = new URL(url)
  if (base.pathname.replace(/\/$/, '').endsWith(JOIN_PATH)) return base.toString()
  base.pathname = `${base.pathname.replace(/\/$/, '')}${JOIN_PATH}`
  return base.toString()
}

/**
 * Posts a join to the control plane (`POST /cluster/v1/join`). Throws JoinRefusedError with the
 * control plane's own message for a refusal, an Error naming the URL when nothing answers.
 */
export async function postJoin(url: string, request: JoinRequest): Promise<JoinAnswer> {
  const endpoint = joinEndpoint(url)
  let res: Response
  try {
    res = await fetch(endpoint, { method: 'POST', body: JSON.stringify(request), headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(JOIN_TIMEOUT_MS) })
  } catch (err) {
    throw new Error(`the control plane at ${endpoint} does not answer (${reason(err)}): check the URL and that this box reaches it`)
  }
  const body = (await res.json().catch(() => null)) as (JoinAnswer & { error?: { code: string; message: string; param?: string } }) | null
  if (res.ok && body?.nodeId) return body
  if (body?.error) throw new JoinRefusedError(res.status, body.error.code, body.error.message, body.error.param ?? null)
  throw new JoinRefusedError(res.status, 'unexpected_answer', `${endpoint} answered ${res.status} without a join answer: is it a Berth control plane with cluster.enabled = true?`, null)
}

function reason(err: unknown): string {
  const e = err as { code?: unknown; name?: string; message?: string }
  if (e?.name === 'TimeoutError') return `no answer in ${JOIN_TIMEOUT_MS / 1000} s`
  return typeof e?.code === 'string' ? e.code : e?.message ?? String(err)
}
