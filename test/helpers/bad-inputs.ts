import { expect } from 'vitest'
import type { InProcess } from './in-process'
import { stateOf, type KeyName, type SiteFixture } from './site-fixture'

/**
 * One row of a bad-input table of the site routes (test/bad-inputs-*.test.ts): a request and the
 * error it must get. `path`, `raw` and `body` may name the fixture's values as {placeholders}
 * (`{shared}`, `{vps}`, `{snapshot}`...; see site-fixture.ts).
 */
export interface Row {
  name: string
  method: string
  path: string
  /** The key sent as bearer: the owner's unless told; null sends none. */
  as?: KeyName | null
  /** Sent JSON-encoded with Content-Type: application/json. */
  body?: unknown
  /** Sent as-is. */
  raw?: string
  /** Sent chunked (a stream without Content-Length) of this many bytes. */
  chunked?: number
  headers?: Record<string, string>
  /** [status, error.code, error.param] */
  expect: [number, string, string | null]
  /** The message must match: it names the field or says what to do. */
  says?: RegExp
  header?: [string, string]
  /** The request reaches a rate-limited handler, so exactly one rate-limit hit is recorded. */
  counted?: boolean
}

export const V1 = '/api/v1'
export const UNKNOWN_UUID = '123e4567-e89b-42d3-a456-426614174000'
export const TEN_MB = 10 * 1024 * 1024
/** A JSON object padded to 10 MB: only its size is wrong. */
export const TEN_MB_JSON = `{"path":"a.txt"${' '.repeat(TEN_MB)}}`
export const SQL = encodeURIComponent("1' OR '1'='1")

/** The row for a path ending in '/', and the same row without the trailing slash: both must answer alike. */
export function bothWays(row: Row): Row[]
export function bothWays<R extends { name: string; path: string }>(row: R): R[]
export function bothWays<R extends { name: string; path: string }>(row: R): R[] {
  const [path, query] = row.path.split('?')
  const bare = path!.replace(/\/$/, '') + (query === undefined ? '' : `?${query}`)
  return [{ ...row, name: `${row.name} (with trailing slash)` }, { ...row, name: `${row.name} (without trailing slash)`, path: bare }]
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
/** What a leaked stack trace or host path looks like. */
const LEAK = /\n\s+at |node_modules|\/src\/|\.[cm]?[jt]s:\d+|\/work\/|\/home\/|\/tmp\/|\/var\/lib\/docker|\/var\/lib\/berth/

/**
 * Sends the row and checks: status, code and param; the error envelope and nothing else; a message
 * that is one sentence (what to do is checked by `says`); no stack trace or host path; and that
 * nothing changed (site rows, keys, archives, deployments, files, authorized_keys, containers).
 */
export async function checkRow(h: InProcess, f: SiteFixture, row: Row, index: number): Promise<void> {
  const before = await stateOf(h, f)
  const as = row.as === undefined ? 'owner' : row.as
  const res = await sendRow(h, row, index, { key: as === null ? null : f.keys[as], fill: (text) => fill(text, f) })
  expectErrorAnswer(h, res, row)
  expect(res.text).not.toContain(f.homes.shared)
  const after = await stateOf(h, f)
  if (row.counted) expect(after.rateLimitHits).toBe(before.rateLimitHits + 1)
  expect({ ...after, rateLimitHits: before.rateLimitHits }).toEqual(before)
}

/** What a bad-input row's request must get: what any route's row needs of a request. */
export interface RowRequest {
  method: string
  path: string
  body?: unknown
  raw?: string
  chunked?: number
  headers?: Record<string, string>
}

export interface RowAnswer {
  status: number
  headers: Headers
  text: string
  json: any
}

/**
 * Checks an error answer against its row: status, code and param; the error envelope and nothing
 * else; a message that is one sentence (what to do is checked by `says`); the request id; no
 * stack trace or host path.
 */
export function expectErrorAnswer(h: InProcess, res: RowAnswer, row: { expect: [number, string, string | null]; says?: RegExp; header?: [string, string] }): void {
  const [status, code, param] = row.expect
  expect({ status: res.status, code: res.json.error?.code, param: res.json.error?.param }, res.text.slice(0, 300)).toEqual({ status, code, param })
  expect(Object.keys(res.json).sort()).toEqual(['error', 'meta', 'ok'])
  expect(res.json.ok).toBe(false)
  expect(Object.keys(res.json.error).sort()).toEqual(['code', 'message', 'param'])
  // One sentence; it may open with a quoted value or a field name ('public' is a folder...).
  expect(res.json.error.message).toMatch(/^[A-Za-z'].{10,}\.$/s)
  expect(res.headers.get('content-type')).toMatch(/^application\/json/)
  expect(res.json.meta.request_id).toMatch(UUID)
  expect(res.headers.get('x-request-id')).toBe(res.json.meta.request_id)
  expect(res.text).not.toMatch(LEAK)
  expect(res.text).not.toContain(h.dir)
  if (row.says) expect(res.json.error.message).toMatch(row.says)
  if (row.header) expect(res.headers.get(row.header[0])).toBe(row.header[1])
}

/**
 * Builds the row's Request (placeholders filled by `fill`, bearer `key` unless null) and sends it
 * through the app; each row poses as its own client address.
 */
export async function sendRow(h: InProcess, row: RowRequest, index: number, opts: { key: string | null; fill: (text: string) => string }): Promise<RowAnswer> {
  const headers = new Headers({ 'x-forwarded-for': `198.18.${index >> 8}.${index & 255}`, ...row.headers })
  if (opts.key !== null) headers.set('authorization', `Bearer ${opts.key}`)
  let body: BodyInit | undefined = row.raw === undefined ? undefined : opts.fill(row.raw)
  if (row.body !== undefined) {
    body = opts.fill(JSON.stringify(row.body))
    if (!headers.has('content-type')) headers.set('content-type', 'application/json')
  }
  if (row.chunked !== undefined) body = chunks(row.chunked)
  const res = await h.app.handle(new Request(`http://localhost${opts.fill(row.path)}`, { method: row.method, headers, body, duplex: 'half' } as RequestInit))
  const text = await res.text()
  return { status: res.status, headers: res.headers, text, json: JSON.parse(text) }
}

function fill(text: string, f: SiteFixture): string {
  return text.replace(/\{(\w+)\}/g, (all, name: string) => f.values[name] ?? all)
}

/** A body without Content-Length: `total` spaces in 64 KB chunks, produced on demand. */
export function chunks(total: number): ReadableStream<Uint8Array> {
  let left = total
  return new ReadableStream({
    pull(controller) {
      const size = Math.min(left, 64 * 1024)
      left -= size
      controller.enqueue(new Uint8Array(size).fill(0x20))
      if (left === 0) controller.close()
    },
  })
}
