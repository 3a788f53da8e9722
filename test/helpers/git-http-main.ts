/**
 * The git smart-HTTP server of test/helpers/git-server.ts, run inside its network namespace
 * (`ip netns exec`): `git http-backend` as a CGI behind Bun.serve, on port 80 (HTTP) and 443
 * (HTTPS, the test's own certificate). A repository named in `auth.json` ({"priv.git": "TOKEN"})
 * wants HTTP Basic auth with that token as the password (any user name, as GitHub takes
 * `x-access-token`); others are public. Each request is one line in `requests.log` (with the `deepen N` of a shallow fetch).
 *
 * argv: ROOT (the bare repositories' folder; auth.json, cert.pem, key.pem and the log beside it).
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const root = Bun.argv[2]
const repos = join(root, 'repos')

async function handle(req: Request, scheme: string): Promise<Response> {
  const url = new URL(req.url)
  const repo = url.pathname.split('/')[1] ?? ''
  const authFile = join(root, 'auth.json')
  const tokens = existsSync(authFile) ? (JSON.parse(readFileSync(authFile, 'utf8')) as Record<string, string>) : {}
  const header = req.headers.get('authorization') ?? ''
  const given = header.startsWith('Basic ') ? Buffer.from(header.slice(6), 'base64').toString('utf8') : ''
  const user = given.includes(':') ? given.slice(0, given.indexOf(':')) : ''
  const password = given.includes(':') ? given.slice(given.indexOf(':') + 1) : ''
  const body = req.method === 'POST' ? new Uint8Array(await req.arrayBuffer()) : new Uint8Array()
  // A shallow fetch asks for `deepen 1` in its upload-pack request (gzipped when large).
  const plain = req.headers.get('content-encoding') === 'gzip' ? Bun.gunzipSync(body) : body
  const text = Buffer.from(plain).toString('latin1')
  const pkt = /([0-9a-f]{4})deepen /.exec(text)
  const deepen = pkt ? text.slice(pkt.index + 11, pkt.index + parseInt(pkt[1], 16)).trim() : '-'
  appendFileSync(join(root, 'requests.log'), `${scheme} ${req.method} ${url.pathname}${url.search} deepen=${deepen} auth=${header ? 'basic' : 'none'}\n`)
  if (tokens[repo] !== undefined && password !== tokens[repo]) {
    return new Response('authentication required\n', { status: 401, headers: { 'WWW-Authenticate': 'Basic realm="berth test git"' } })
  }
  const cgi = Bun.spawn(['git', 'http-backend'], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      GIT_PROJECT_ROOT: repos,
      GIT_HTTP_EXPORT_ALL: '1',
      PATH_INFO: url.pathname,
      QUERY_STRING: url.search.slice(1),
      REQUEST_METHOD: req.method,
      CONTENT_TYPE: req.headers.get('content-type') ?? '',
      CONTENT_LENGTH: String(body.length),
      HTTP_CONTENT_ENCODING: req.headers.get('content-encoding') ?? '',
      GIT_PROTOCOL: req.headers.get('git-protocol') ?? '',
      REMOTE_USER: user,
      REMOTE_ADDR: '0.0.0.0',
    },
    stdin: body,
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const out = Buffer.from(await new Response(cgi.stdout).arrayBuffer())
  await cgi.exited
  const split = out.indexOf('\r\n\r\n')
  const headEnd = split === -1 ? out.indexOf('\n\n') : split
  const head = out.subarray(0, headEnd).toString('latin1')
  const headers = new Headers()
  let status = 200
  for (const line of head.split(/\r?\n/)) {
    const colon = line.indexOf(':')
    if (colon <= 0) continue
    const name = line.slice(0, colon).trim()
    const value = line.slice(colon + 1).trim()
    if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0])
    else headers.append(name, value)
  }
  return new Response(out.subarray(headEnd + (split === -1 ? 2 : 4)), { status, headers })
}

Bun.serve({ hostname: '0.0.0.0', port: 80, fetch: (req) => handle(req, 'http') })
Bun.serve({
  hostname: '0.0.0.0',
  port: 443,
  tls: { cert: readFileSync(join(root, 'cert.pem'), 'utf8'), key: readFileSync(join(root, 'key.pem'), 'utf8') },
  fetch: (req) => handle(req, 'https'),
})
console.log('listening')
