/**
 * The bare reference of the files benchmark: a plain `Bun.serve` doing the same file work as the
 * files API with plain node:fs calls on a folder (no auth, no validation, no path resolver, no
 * ownership change, no atomic rename), answering the same envelope. Run in its own process:
 *   bun bench/files-reference.ts <port> <root>
 * Routes: POST /write {path, content}; GET /read?path=; GET /list?path=.
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

const [port, root] = process.argv.slice(2)
if (!port || !root) {
  console.error('usage: bun bench/files-reference.ts <port> <root>')
  process.exit(2)
}

const envelope = (data: unknown) => {
  const requestId = crypto.randomUUID()
  return Response.json({ ok: true, data, meta: { request_id: requestId, timestamp: new Date().toISOString() } }, { headers: { 'x-request-id': requestId } })
}

const entry = (path: string, name: string) => {
  const st = lstatSync(join(root, path))
  return { name, path, type: st.isFile() ? 'file' : st.isDirectory() ? 'dir' : 'other', size: st.size, modified_at: st.mtime.toISOString(), mode: (st.mode & 0o7777).toString(8).padStart(4, '0') }
}

Bun.serve({
  hostname: '127.0.0.1',
  port: Number(port),
  async fetch(request) {
    const url = new URL(request.url)
    const path = url.searchParams.get('path') ?? ''
    if (request.method === 'POST' && url.pathname === '/write') {
      const body = (await request.json()) as { path: string; content: string }
      mkdirSync(dirname(join(root, body.path)), { recursive: true })
      writeFileSync(join(root, body.path), body.content)
      return envelope({ ...entry(body.path, body.path.split('/').at(-1)!), created: false })
    }
    if (url.pathname === '/read') return envelope({ ...entry(path, path.split('/').at(-1)!), content: readFileSync(join(root, path), 'utf8') })
    if (url.pathname === '/list') {
      const names = readdirSync(join(root, path)).sort()
      return envelope({ path, entries: names.map((n) => entry(`${path}/${n}`, n)), truncated: false })
    }
    return new Response('not found', { status: 404 })
  },
})
