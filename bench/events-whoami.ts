/**
 * The API client of `bun run bench:events` (bench/events.ts), in a process of its own as an agent
 * would be: `bun bench/events-whoami.ts URL KEY MS` sends GET /api/v1/auth/whoami/ one request at
 * a time for MS milliseconds and prints `{"p50":..,"p99":..,"n":..}` (ms).
 */
const [url, key, ms] = process.argv.slice(2) as [string, string, string]
const times: number[] = []
const end = performance.now() + Number(ms)
while (performance.now() < end) {
  const started = performance.now()
  const res = await fetch(`${url}/api/v1/auth/whoami/`, { headers: { authorization: `Bearer ${key}` } })
  await res.arrayBuffer()
  if (res.status !== 200) throw new Error(`whoami answered ${res.status}`)
  times.push(performance.now() - started)
}
times.sort((a, b) => a - b)
const at = (p: number) => times[Math.min(times.length - 1, Math.floor((times.length * p) / 100))]!
process.stdout.write(JSON.stringify({ p50: at(50), p99: at(99), n: times.length }) + '\n')
export {}
