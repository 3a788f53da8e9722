/**
 * The bare reference for the API benchmarks: plain `Bun.serve` listeners that answer with the same
 * envelope berth sends, built per request (fresh request id and timestamp, JSON.stringify on every
 * call) but with no framework, routing, auth or database. Berth's figures are reported as a ratio
 * against this, measured in the same run, so the noise of a shared machine cancels out.
 *
 * Run by bench/run.ts in its own process so it never shares an event loop with the harness:
 *   bun bench/reference-server.ts <whoami-port> <plans-port> <bodies.json>
 * where bodies.json is `{ "whoami": <data>, "plans": <data> }`, the `data` berth itself returned.
 */
import { readFileSync } from 'node:fs'

interface Bodies {
  whoami: unknown
  plans: unknown
}

/** One listener whose every response is `{ok, data, meta}` with the given data. */
function serveEnvelope(port: number, data: unknown) {
  return Bun.serve({
    hostname: '127.0.0.1',
    port,
    fetch() {
      const requestId = crypto.randomUUID()
      const body = { ok: true, data, meta: { request_id: requestId, timestamp: new Date().toISOString() } }
      // Same headers as berth's envelope, so both sides write comparable responses.
      return Response.json(body, { headers: { 'x-request-id': requestId } })
    },
  })
}

function main() {
  const [whoamiPort, plansPort, bodiesFile] = process.argv.slice(2)
  if (!whoamiPort || !plansPort || !bodiesFile) {
    console.error('usage: bun bench/reference-server.ts <whoami-port> <plans-port> <bodies.json>')
    process.exit(2)
  }
  const bodies = JSON.parse(readFileSync(bodiesFile, 'utf8')) as Bodies
  serveEnvelope(Number(whoamiPort), bodies.whoami)
  serveEnvelope(Number(plansPort), bodies.plans)
  process.once('SIGTERM', () => process.exit(0))
  process.once('SIGINT', () => process.exit(0))
}

main()
