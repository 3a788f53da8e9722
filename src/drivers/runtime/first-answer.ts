import type { SiteEndpoint } from './types'

/** How long a (re)started container may take to answer its first HTTP request. */
const FIRST_ANSWER_TIMEOUT_MS = 20_000

/** Polls the container's web server until it answers anything, every 5 ms. */
export async function waitForAnswer(endpoint: SiteEndpoint, timeoutMs = FIRST_ANSWER_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let lastError = ''
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`http://${endpoint.address}:${endpoint.port}/`, { signal: AbortSignal.timeout(1000) })
      await res.arrayBuffer()
      return
    } catch (err) {
      lastError = (err as Error).message
      await Bun.sleep(5)
    }
  }
  throw new Error(`the site's web server did not answer within ${timeoutMs / 1000} s (${lastError})`)
}

/**
 * True when a TCP connection to the site's endpoint is accepted within `timeoutMs` (then closed
 * at once, nothing sent: the site's own logs see nothing). For a site on a node whose agent does
 * not answer (domain/cluster/health.ts): its kernel forward outlives the agent and reaches the
 * container while it runs; a dead container or a lost node refuses or swallows the SYN.
 */
export async function acceptsConnection(endpoint: Pick<SiteEndpoint, 'address' | 'port'>, timeoutMs = 1_000): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timedOut = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), timeoutMs)))
  const connecting = Bun.connect({ hostname: endpoint.address, port: endpoint.port, socket: { data() {}, error() {} } }).catch(() => null)
  try {
    const socket = await Promise.race([connecting, timedOut])
    if (socket) {
      socket.terminate()
      return true
    }
    // A connection made after the time is up is closed too.
    void connecting.then((late) => late?.terminate())
    return false
  } finally {
    clearTimeout(timer)
  }
}
