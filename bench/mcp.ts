/**
 * `bun run bench:mcp`: the same operations through MCP (`tools/call` on /mcp/) and through REST,
 * in the same run, on the compiled binary: `whoami` (a keyed read) and `list_plans` (the public
 * catalog). wrk with the usual settings (bench/wrk.ts), 3 interleaved rounds; the figure is the
 * median of MCP's requests per second over REST's. Goal (issue 10): at least 0.5.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { cleanupOnExit, startBerth, tempDir } from './processes'
import { median } from './stats'
import { measure, warmUp, WRK_SETTINGS, wrkInstalled, type WrkResult, type WrkTarget } from './wrk'

const GOAL = 0.5
const ROUNDS = 3

async function main() {
  if (!wrkInstalled()) throw new Error('wrk is not installed; install it with: apt-get install wrk')
  cleanupOnExit()
  const dir = tempDir('berth-bench-mcp-')
  const berth = await startBerth(dir)
  try {
    const key = (await (await fetch(`${berth.url}/api/v1/auth/register/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json()).data.api_key as string
    const session = await initialize(`${berth.url}/mcp/`, key)
    const mcpTarget = (name: string, tool: string): WrkTarget => {
      const script = join(dir, `${tool}.lua`)
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: tool, arguments: {} } })
      writeFileSync(script, `wrk.method = "POST"\nwrk.body = ${JSON.stringify(body)}\n`)
      return { name, url: `${berth.url}/mcp/`, pid: berth.proc.pid, script, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } }
    }
    const pairs: [WrkTarget, WrkTarget][] = [
      [{ name: 'REST GET /auth/whoami/', url: `${berth.url}/api/v1/auth/whoami/`, pid: berth.proc.pid, headers: { authorization: `Bearer ${key}` } }, mcpTarget('MCP tools/call whoami', 'whoami')],
      [{ name: 'REST GET /plans/', url: `${berth.url}/api/v1/plans/`, pid: berth.proc.pid }, mcpTarget('MCP tools/call list_plans', 'list_plans')],
    ]
    console.log(`MCP against REST: wrk -t${WRK_SETTINGS.threads} -c${WRK_SETTINGS.connections}, ${WRK_SETTINGS.warmupSeconds} s warm-up + ${WRK_SETTINGS.durationSeconds} s, ${ROUNDS} rounds`)
    const ratios = new Map<string, number[]>()
    const last = new Map<string, WrkResult>()
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [rest, mcp] of pairs) {
        const results: WrkResult[] = []
        for (const target of [rest, mcp]) {
          await warmUp(target)
          const r = await measure(target)
          if (r.non2xx > 0) throw new Error(`${target.name}: ${r.non2xx} answers outside 2xx`)
          results.push(r)
          last.set(target.name, r)
          console.log(`  round ${round}/${ROUNDS} ${target.name.padEnd(28)} ${Math.round(r.requestsPerSec).toString().padStart(6)} req/s  p50 ${r.p50Ms.toFixed(2)} ms  p99 ${r.p99Ms.toFixed(2)} ms`)
        }
        const ratio = results[1]!.requestsPerSec / results[0]!.requestsPerSec
        ratios.set(mcp.name, [...(ratios.get(mcp.name) ?? []), ratio])
      }
    }
    console.log('\nOperation            REST req/s  MCP req/s  MCP/REST (median of rounds)  goal')
    let failed = false
    for (const [rest, mcp] of pairs) {
      const r = median(ratios.get(mcp.name)!)
      failed ||= r < GOAL
      console.log(`${mcp.name.replace('MCP tools/call ', '').padEnd(20)} ${Math.round(last.get(rest.name)!.requestsPerSec).toString().padStart(10)} ${Math.round(last.get(mcp.name)!.requestsPerSec).toString().padStart(10)}  ${r.toFixed(2).padStart(27)}  ≥ ${GOAL}: ${r >= GOAL ? 'PASS' : 'FAIL'}`)
    }
    if (failed) process.exitCode = 1
  } finally {
    await berth.stop()
  }
}

/** Opens an MCP session with the key; its id. */
async function initialize(url: string, key: string): Promise<string> {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }) })
  const session = res.headers.get('mcp-session-id')
  await res.text()
  if (!session) throw new Error(`initialize answered ${res.status} without a session`)
  await (await fetch(url, { method: 'POST', headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text()
  return session
}

await main()
