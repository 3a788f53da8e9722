/**
 * A FAKE OpenAI-compatible API: no language model can run on the machines the tests run on, and
 * no hosted provider can be reached from them, so the AI driver (src/drivers/ai/openai.ts) and
 * the modules built on it are tested over real HTTP against this stand-in. It answers the way
 * OpenAI, llama.cpp's llama-server and vLLM do, for the two endpoints Berth calls:
 *
 * - `POST /v1/chat/completions`: `{ model, messages, max_tokens?, temperature?, stream? }`.
 *   Not streamed: a `chat.completion` with `choices[0].message.content` and `usage`. Streamed
 *   (`stream: true`): `text/event-stream` of `chat.completion.chunk` events (`data: {...}` then a
 *   blank line): first the role, then the text a word at a time, then `finish_reason`, then, when
 *   `stream_options.include_usage` is true, a chunk with `choices: []` and `usage`, then
 *   `data: [DONE]`. `max_tokens` cuts the answer (`finish_reason: "length"`).
 * - `POST /v1/embeddings`: `{ model, input: string | string[] }` answers one vector per input in
 *   `data[].embedding`, with `index`.
 *
 * What it answers is deterministic: the responder (default: echoes the last user message, so a
 * test can check the model saw the context put there), token counts of ceil(characters / 4), and
 * embeddings that are hashed bags of words (texts sharing words are close in cosine similarity).
 * Errors use OpenAI's envelope `{ error: { message, type, param, code } }`. Every request is
 * recorded, failed ones included; `failNext`, `rateLimitNext`, `malformNext`, `delayMs` and
 * `chunkDelayMs` make it misbehave.
 */
export type FakeRole = 'system' | 'user' | 'assistant'

export interface FakeMessage {
  role: FakeRole
  content: string
}

/** What the fake model answers to a conversation. */
export type Responder = (messages: FakeMessage[]) => string

export interface FakeOpenAiRequest {
  method: string
  /** e.g. `/v1/chat/completions` */
  path: string
  /** The parsed JSON body (the raw text when it is not JSON). */
  body: unknown
  /** Lower-case names. */
  headers: Record<string, string>
}

export interface FakeOpenAiOptions {
  responder?: Responder
  /** Length of the embedding vectors; default 64. */
  dimensions?: number
  /** When set, requests without `Authorization: Bearer {apiKey}` answer 401, as OpenAI does. */
  apiKey?: string
  /** When false, the fake ignores `stream_options.include_usage` (as some servers do); default true. */
  streamUsage?: boolean
}

export interface FakeOpenAi {
  /** The base URL to configure (`ai.base_url`), e.g. `http://127.0.0.1:41234/v1`. */
  url: string
  /** Every request, in order, including those answered with a planned failure. */
  requests: FakeOpenAiRequest[]
  /** What the model answers; assign to change it. */
  responder: Responder
  /** Waits this long before answering each request (headers included); assign to force timeouts. */
  delayMs: number
  /** Streaming: waits this long before each piece of text after the first. */
  chunkDelayMs: number
  /** The next `times` requests (Infinity: all) answer `status` with an OpenAI error body. */
  failNext(status: number, times?: number): void
  /** The next `times` requests answer 429 with `Retry-After: {retryAfterSeconds}`. */
  rateLimitNext(retryAfterSeconds: number, times?: number): void
  /** The next request answers 200 with this body as is (default: a JSON completion without `choices`). */
  malformNext(body?: string): void
  /** Forgets the requests and every planned failure and delay; restores the default responder. */
  reset(): void
  stop(): Promise<void>
}

interface Planned {
  status: number
  body: string
  headers: Record<string, string>
  remaining: number
}

/** The default answer: deterministic, and quoting the last user message whole. */
export const echoResponder: Responder = (messages) => {
  const last = messages.findLast((m) => m.role === 'user')
  return `Fake answer to: ${last?.content ?? ''}`
}

/** The fake's token count of a text: ceil(characters / 4). */
export const fakeTokens = (text: string) => Math.ceil(text.length / 4)

/**
 * The fake's embedding of a text: each word (letters and digits, lower-cased) adds 1 to the slot
 * its FNV-1a hash picks; the vector is scaled to length 1 (all zeros for a text without words).
 */
export function fakeEmbedding(text: string, dimensions = 64): number[] {
  const vector = new Array<number>(dimensions).fill(0)
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    let hash = 0x811c9dc5
    for (const byte of new TextEncoder().encode(word)) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0
    vector[hash % dimensions]! += 1
  }
  const norm = Math.hypot(...vector)
  return norm === 0 ? vector : vector.map((x) => x / norm)
}

/**
 * Starts the fake on 127.0.0.1 and a free port.
 *
 * @example
 * const ai = await startFakeOpenAi({ responder: () => 'Paris' })
 * const provider = new OpenAiCompatibleProvider({ baseUrl: ai.url, apiKey: '', model: 'fake', log })
 * ai.failNext(503) // the next call is retried once
 * await ai.stop()
 */
export async function startFakeOpenAi(opts: FakeOpenAiOptions = {}): Promise<FakeOpenAi> {
  const dimensions = opts.dimensions ?? 64
  const planned: Planned[] = []
  let counter = 0

  const fake: FakeOpenAi = {
    url: '',
    requests: [],
    responder: opts.responder ?? echoResponder,
    delayMs: 0,
    chunkDelayMs: 0,
    failNext(status, times = 1) {
      const type = status >= 500 ? 'server_error' : 'invalid_request_error'
      planned.push({ status, body: errorBody(`Fake failure with HTTP ${status}`, type, null, `fake_${status}`), headers: {}, remaining: times })
    },
    rateLimitNext(retryAfterSeconds, times = 1) {
      const body = errorBody('Rate limit reached for requests. Please try again later.', 'requests', null, 'rate_limit_exceeded')
      planned.push({ status: 429, body, headers: { 'retry-after': String(retryAfterSeconds) }, remaining: times })
    },
    malformNext(body = JSON.stringify({ id: 'chatcmpl-malformed', object: 'chat.completion', model: 'fake' })) {
      planned.push({ status: 200, body, headers: {}, remaining: 1 })
    },
    reset() {
      fake.requests.length = 0
      planned.length = 0
      fake.delayMs = 0
      fake.chunkDelayMs = 0
      fake.responder = opts.responder ?? echoResponder
    },
    async stop() {
      await server.stop(true)
    },
  }

  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    // Delays are the point: never let Bun close a connection the fake keeps waiting on purpose.
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url)
      const text = await req.text()
      const body = parseJson(text)
      fake.requests.push({ method: req.method, path: url.pathname, body: body === undefined ? text : body, headers: headersOf(req.headers) })
      if (fake.delayMs > 0) await Bun.sleep(fake.delayMs)
      const next = planned[0]
      if (next) {
        if (--next.remaining <= 0) planned.shift()
        return new Response(next.body, { status: next.status, headers: { 'content-type': 'application/json', ...next.headers } })
      }
      if (opts.apiKey !== undefined && req.headers.get('authorization') !== `Bearer ${opts.apiKey}`) {
        return error(401, 'Incorrect API key provided.', 'invalid_request_error', null, 'invalid_api_key')
      }
      if (req.method !== 'POST') return error(405, `Method ${req.method} not allowed on ${url.pathname}`, 'invalid_request_error', null, null)
      if (body === undefined || !isObject(body)) return error(400, 'We could not parse the JSON body of your request.', 'invalid_request_error', null, null)
      if (url.pathname === '/v1/chat/completions') return chatCompletion(body, `chatcmpl-fake${++counter}`)
      if (url.pathname === '/v1/embeddings') return embeddings(body)
      return error(404, `Invalid URL (POST ${url.pathname})`, 'invalid_request_error', null, null)
    },
  })
  fake.url = `http://127.0.0.1:${server.port}/v1`

  function chatCompletion(body: Record<string, unknown>, id: string): Response {
    if (typeof body.model !== 'string' || body.model === '') return error(400, 'you must provide a model parameter', 'invalid_request_error', 'model', null)
    const messages = body.messages
    if (!Array.isArray(messages) || messages.length === 0 || !messages.every(isMessage)) {
      return error(400, "Invalid 'messages': expected a non-empty array of {role, content} objects.", 'invalid_request_error', 'messages', null)
    }
    const full = fake.responder(messages)
    const maxTokens = typeof body.max_tokens === 'number' ? body.max_tokens : Infinity
    const text = fakeTokens(full) > maxTokens ? full.slice(0, maxTokens * 4) : full
    const finishReason = text === full ? 'stop' : 'length'
    const promptTokens = messages.reduce((n, m) => n + fakeTokens(m.content), 0)
    const usage = { prompt_tokens: promptTokens, completion_tokens: fakeTokens(text), total_tokens: promptTokens + fakeTokens(text) }
    const created = Math.floor(Date.now() / 1000)
    const base = { id, created, model: body.model, system_fingerprint: 'fp_fake' }
    if (body.stream !== true) {
      return Response.json({ ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: finishReason }], usage })
    }
    const includeUsage = (opts.streamUsage ?? true) && isObject(body.stream_options) && body.stream_options.include_usage === true
    const chunk = (choices: unknown[], extra: object = {}) => `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices, ...(includeUsage && { usage: null }), ...extra })}\n\n`
    const pieces = text.match(/\S+\s*|\s+/g) ?? []
    const encoder = new TextEncoder()
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        const send = (s: string) => controller.enqueue(encoder.encode(s))
        try {
          send(chunk([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]))
          for (const [i, piece] of pieces.entries()) {
            if (i > 0 && fake.chunkDelayMs > 0) await Bun.sleep(fake.chunkDelayMs)
            send(chunk([{ index: 0, delta: { content: piece }, logprobs: null, finish_reason: null }]))
          }
          send(chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: finishReason }]))
          if (includeUsage) send(chunk([], { usage }))
          send('data: [DONE]\n\n')
          controller.close()
        } catch {
          // The client went away mid-stream (a timeout test): nothing left to send to.
        }
      },
    })
    return new Response(stream, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } })
  }

  function embeddings(body: Record<string, unknown>): Response {
    if (typeof body.model !== 'string' || body.model === '') return error(400, 'you must provide a model parameter', 'invalid_request_error', 'model', null)
    const input = typeof body.input === 'string' ? [body.input] : body.input
    if (!Array.isArray(input) || input.length === 0 || !input.every((t) => typeof t === 'string')) {
      return error(400, "'input' must be a string or a non-empty array of strings.", 'invalid_request_error', 'input', null)
    }
    const size = typeof body.dimensions === 'number' ? body.dimensions : dimensions
    const tokens = input.reduce((n, t) => n + fakeTokens(t), 0)
    return Response.json({
      object: 'list',
      data: input.map((t, index) => ({ object: 'embedding', index, embedding: fakeEmbedding(t, size) })),
      model: body.model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    })
  }

  return fake
}

function errorBody(message: string, type: string, param: string | null, code: string | null): string {
  return JSON.stringify({ error: { message, type, param, code } })
}

function error(status: number, message: string, type: string, param: string | null, code: string | null): Response {
  return new Response(errorBody(message, type, param, code), { status, headers: { 'content-type': 'application/json' } })
}

function headersOf(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {}
  headers.forEach((value, name) => {
    out[name] = value
  })
  return out
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

const isMessage = (m: unknown): m is FakeMessage =>
  isObject(m) && ['system', 'user', 'assistant'].includes(m.role as string) && typeof m.content === 'string'
