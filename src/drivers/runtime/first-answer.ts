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
