/**
 * The receivers of `bun run bench:events` (bench/events.ts), in a process of their own so their
 * work is not Berth's: `bun bench/webhook-receivers.ts FAST SLOW SLOW_MS` listens on FAST + SLOW
 * loopback ports, prints `ports p1,p2,...` (the fast ones first), then one line per request:
 * `got <webhook-id> <ms since the epoch, fractional>`; a slow port answers after SLOW_MS.
 */
const [fast, slow, slowMs] = process.argv.slice(2).map(Number) as [number, number, number]
const now = () => performance.timeOrigin + performance.now()
const ports: number[] = []
for (let i = 0; i < fast + slow; i++) {
  const delay = i < fast ? 0 : slowMs
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: async (req) => {
      const at = now()
      await req.arrayBuffer()
      process.stdout.write(`got ${req.headers.get('webhook-id')} ${at}\n`)
      if (delay > 0) await Bun.sleep(delay)
      return new Response('ok')
    },
  })
  ports.push(server.port!)
}
process.stdout.write(`ports ${ports.join(',')}\n`)
