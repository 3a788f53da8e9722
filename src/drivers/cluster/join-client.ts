import { createHash, X509Certificate } from 'node:crypto'
import { connect } from 'node:tls'
import type { JoinAnswer, JoinRequest } from './types'

/** The join path on the control plane's join listener (api/cluster/join.ts CLUSTER_JOIN_PATH). */
const JOIN_PATH = '/cluster/v1/join'
const JOIN_TIMEOUT_MS = 30_000
const PROBE_TIMEOUT_MS = 10_000

/** The control plane refused the join: its envelope's code, message and field. */
export class JoinRefusedError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly param: string | null) {
    super(message)
  }
}

/** Whoever answered the join URL is not the control plane the join command names: nothing was sent to it. */
export class NotTheControlPlaneError extends Error {}

/** `berth node join URL`'s endpoint: URL as given when it names the path, else the path under it. */
export function joinEndpoint(url: string): string {
  const base = new URL(url)
  if (base.pathname.replace(/\/$/, '').endsWith(JOIN_PATH)) return base.toString()
  base.pathname = `${base.pathname.replace(/\/$/, '')}${JOIN_PATH}`
  return base.toString()
}

/**
 * A fingerprint as `berth nodes token` prints it (`sha256:` and 64 hex digits; colons, case and
 * the prefix are forgiven), as lower-case hex; null when it is not one.
 */
export function parseFingerprint(text: string): string | null {
  const hex = text.trim().replace(/^sha256:/i, '').replaceAll(':', '').toLowerCase()
  return /^[0-9a-f]{64}$/.test(hex) ? hex : null
}

/**
 * Checks that the control plane at `url` (https://) shows the certificate whose SHA-256 is
 * `fingerprint`, with a TLS handshake and nothing sent; answers its PEM, which the join then
 * trusts alone. Throws NotTheControlPlaneError for another certificate or a plain http:// URL,
 * an Error naming the URL when nothing answers.
 */
export async function checkControlPlane(url: string, fingerprint: string): Promise<string> {
  const endpoint = new URL(joinEndpoint(url))
  if (endpoint.protocol !== 'https:') {
    throw new NotTheControlPlaneError(`${url} is not https://: the join goes over TLS to the control plane's join listener (cluster.join_port), pinned to its certificate; run the command berth nodes token prints`)
  }
  const port = Number(endpoint.port || 443)
  const host = endpoint.hostname.replace(/^\[|\]$/g, '')
  const der = await new Promise<Buffer>((resolve, reject) => {
    const socket = connect({ host, port, rejectUnauthorized: false, ...(isIpLiteral(host) ? {} : { servername: host }) })
    const timer = setTimeout(() => socket.destroy(new Error(`no TLS answer in ${PROBE_TIMEOUT_MS / 1000} s`)), PROBE_TIMEOUT_MS)
    socket.once('secureConnect', () => {
      const raw = socket.getPeerCertificate(false)?.raw
      clearTimeout(timer)
      socket.destroy()
      if (raw) resolve(raw)
      else reject(new Error('it showed no certificate'))
    })
    socket.once('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
  }).catch((err) => {
    throw new Error(`the control plane at ${endpoint.origin} does not answer over TLS (${reason(err)}): check the URL and that this box reaches it`)
  })
  const shown = createHash('sha256').update(der).digest('hex')
  if (shown !== fingerprint) {
    throw new NotTheControlPlaneError(
      `${endpoint.origin} showed a certificate whose SHA-256 is ${shown}, not the control plane's (${fingerprint}): ` +
      'it is not your control plane, or the command is not the one berth nodes token printed there. Nothing was sent to it',
    )
  }
  return new X509Certificate(der).toString()
}

/**
 * Posts a join to the control plane (`POST /cluster/v1/join`) over TLS pinned to `fingerprint`
 * (the certificate checkControlPlane found, trusted alone). Throws JoinRefusedError with the
 * control plane's own message for a refusal, NotTheControlPlaneError when another certificate
 * answers, an Error naming the URL when nothing answers.
 */
export async function postJoin(url: string, fingerprint: string, request: JoinRequest): Promise<JoinAnswer> {
  const ca = await checkControlPlane(url, fingerprint)
  const endpoint = joinEndpoint(url)
  let pinFailed: Error | null = null
  const checkServerIdentity = (_host: string, cert: { raw?: Uint8Array }) => {
    const shown = cert.raw ? createHash('sha256').update(cert.raw).digest('hex') : ''
    if (shown === fingerprint) return undefined
    pinFailed = new NotTheControlPlaneError(`${new URL(endpoint).origin} showed another certificate than the control plane's (${fingerprint}) for the join: nothing was sent`)
    return pinFailed
  }
  let res: Response
  try {
    res = await fetch(endpoint, {
      method: 'POST', body: JSON.stringify(request), headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(JOIN_TIMEOUT_MS),
      tls: { ca, rejectUnauthorized: true, checkServerIdentity },
    } as RequestInit)
  } catch (err) {
    if (pinFailed) throw pinFailed
    throw new Error(`the control plane at ${endpoint} does not answer (${reason(err)}): check the URL and that this box reaches it`)
  }
  const body = (await res.json().catch(() => null)) as (JoinAnswer & { error?: { code: string; message: string; param?: string } }) | null
  if (res.ok && body?.nodeId) return body
  if (body?.error) throw new JoinRefusedError(res.status, body.error.code, body.error.message, body.error.param ?? null)
  throw new JoinRefusedError(res.status, 'unexpected_answer', `${endpoint} answered ${res.status} without a join answer: is it a Berth control plane with cluster.enabled = true?`, null)
}

function isIpLiteral(host: string): boolean {
  return /^[0-9.]+$/.test(host) || host.includes(':')
}

function reason(err: unknown): string {
  const e = err as { code?: unknown; name?: string; message?: string }
  if (e?.name === 'TimeoutError') return `no answer in ${JOIN_TIMEOUT_MS / 1000} s`
  return typeof e?.code === 'string' ? e.code : e?.message ?? String(err)
}
