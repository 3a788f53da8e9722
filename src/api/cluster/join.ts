import { DomainError } from '../../domain/errors'
import { InvalidJoinTokenError, NodeNameTakenError } from '../../domain/cluster'
import type { JoinAnswer, JoinRequest } from '../../drivers/cluster/types'
import type { Logger } from '../../lib/logger'
import { fromDomainError } from '../http/errors'

/** Where a joining node posts (`berth node join URL`): on the control plane's API listener, outside /api/v1/. */
export const CLUSTER_JOIN_PATH = '/cluster/v1/join'
/** A join request is a few kilobytes (the CSR); more is not one. */
const MAX_JOIN_BYTES = 64 * 1024

/** True for the join's path, with or without a query. */
export function isClusterJoinPath(path: string): boolean {
  const query = path.indexOf('?')
  return (query === -1 ? path : path.slice(0, query)) === CLUSTER_JOIN_PATH
}

/**
 * `POST /cluster/v1/join` (LISTENER_ROUTES' `cluster-join`, drivers/cluster/types.ts JoinRequest →
 * JoinAnswer): outside the public API (no API key, no OpenAPI entry, no MCP tool); the join token
 * is the authorization. Errors in the API's envelope: 401 `invalid_join_token` for a token that is
 * unknown, used or expired; 422 with `param` for bad input; 409 `node_name_taken` (param name) for
 * a name another node has, 409 CONFLICT (param address) for an address taken.
 */
export function clusterJoinHandler(joins: { join(req: JoinRequest): Promise<JoinAnswer> }, log: Logger) {
  return async (request: Request): Promise<Response> => {
    if (request.method !== 'POST') return failure(405, 'METHOD_NOT_ALLOWED', 'POST the join request as JSON.', null, { allow: 'POST' })
    if (Number(request.headers.get('content-length') ?? '0') > MAX_JOIN_BYTES) return failure(413, 'PAYLOAD_TOO_LARGE', 'A join request is a few kilobytes.')
    const text = await request.text()
    if (text.length > MAX_JOIN_BYTES) return failure(413, 'PAYLOAD_TOO_LARGE', 'A join request is a few kilobytes.')
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      return failure(400, 'VALIDATION_ERROR', 'The body is not JSON: send the join request berth node join makes.')
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return failure(422, 'VALIDATION_ERROR', 'The body must be a JSON object (token, csr, name, address, agentPort, memoryBytes, cpus).')
    try {
      return Response.json(await joins.join(body as JoinRequest))
    } catch (err) {
      if (err instanceof InvalidJoinTokenError) return failure(401, 'invalid_join_token', err.message)
      if (err instanceof NodeNameTakenError) return failure(409, 'node_name_taken', err.message, 'name')
      if (err instanceof DomainError) {
        const e = fromDomainError(err, (ref) => ref.operation)
        return failure(e.status, e.code, e.message, e.param)
      }
      log.error('a node\'s join failed', { error: (err as Error).message, stack: (err as Error).stack })
      return failure(500, 'INTERNAL_ERROR', 'The join failed on the control plane; its log says why.')
    }
  }
}

/**
 * The join's path on the API listener (plain HTTP): refused with 426 `join_needs_tls`, saying
 * where the join is taken (`joinUrl`, the join listener, TLS pinned to the control plane's
 * certificate). A join over plain HTTP would trust whatever answered it.
 */
export function clusterJoinOverTlsOnly(joinUrl: string) {
  return async (): Promise<Response> =>
    failure(426, 'join_needs_tls', `Joins are taken at ${joinUrl} over TLS pinned to this control plane's certificate: run the command berth nodes token prints.`, null, { upgrade: 'TLS/1.2' })
}

function failure(status: number, code: string, message: string, param: string | null = null, headers: Record<string, string> = {}): Response {
  return Response.json({ ok: false, error: { code, message, ...(param ? { param } : {}) } }, { status, headers })
}
