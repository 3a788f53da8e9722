// Start-up A/B: dist/berth against another build (argv[2]), interleaved, 8 runs each, spawn to first 200.
// bun bench/startup-ab.ts /path/to/other/berth
const bins = { new: new URL('../dist/berth', import.meta.url).pathname, old: process.argv[2] ?? '/tmp/old/dist/berth' }
const res: Record<string, number[]> = { new: [], old: [] }
let port = 19300
for (let i = 0; i < 8; i++) for (const [name, bin] of Object.entries(bins)) {
  const dir = `/tmp/ab-${name}-${i}`; port++
  const t0 = performance.now()
  const p = Bun.spawn([bin, 'serve', '--listen', `127.0.0.1:${port}`, '--data-dir', dir], { env: { ...process.env, BERTH_CONTAINERS_FIREWALL: 'false' }, stdout: 'ignore', stderr: 'ignore' })
  for (;;) { try { const r = await fetch(`http://127.0.0.1:${port}/api/v1/status/`); if (r.status === 200) break } catch {} await Bun.sleep(2) }
  res[name].push(performance.now() - t0); p.kill(); await p.exited
}
for (const [k, v] of Object.entries(res)) { v.sort((a, b) => a - b); console.log(k, 'median', v[4].toFixed(1), 'all', v.map((x) => x.toFixed(0)).join(' ')) }
