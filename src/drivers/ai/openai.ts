import type { Logger } from '../../lib/logger'
import { VERSION } from '../../version'
import { AiProviderError, type AiProvider, type ChatInput, type ChatMessage, type ChatResult, type ChatStream, type TokenUsage } from './types'

export interface OpenAiCompatibleDeps {
  /** The API root, ending in `/v1` for most servers: `https://api.openai.com/v1`, `http://127.0.0.1:8000/v1`. */
  baseUrl: string
  /** Sent as `Authorization: Bearer ...`; empty sends no Authorization (local llama.cpp or vLLM). */
  apiKey: string
  model: string
  /** The model of `embed`; absent or null uses `model`. */
  embeddingModel?: string | null
  /** Per attempt: how long to wait for an answer (streaming: for each next piece of it). Default 30000. */
  timeoutMs?: number
  /** Retries after the first attempt, for connection failures, 429 and 5xx. Default 2. */
  retries?: number
  log: Logger
  /** Waits between attempts; tests pass one that records instead of sleeping. */
  sleep?: (ms: number) => Promise<void>
}

/** Waits before retry n (0-based) when the provider named no time: 250 ms, 1 s, 4 s, ... */
const backoffMs = (retry: number) => 250 * 4 ** retry
/**
 * The longest Retry-After Berth waits inside one call; a provider asking for more gets the call
 * failed at once as `rate_limited`, with its figure, so the agent can come back later.
 */
export const MAX_RETRY_AFTER_SECONDS = 10
/** Of an upstream error body, this much goes into the message. */
const UPSTREAM_MESSAGE_CHARS = 300

/**
 * An AI provider speaking the OpenAI-compatible HTTP API (`POST /chat/completions`, with
 * `stream: true` as server-sent events, and `POST /embeddings`) with plain fetch: OpenAI itself
 * and the many services and local servers (llama.cpp's llama-server, vLLM, Ollama) that copy it.
 *
 * @example
 * const ai = new OpenAiCompatibleProvider({ baseUrl: 'http://127.0.0.1:8000/v1', apiKey: '', model: 'qwen2.5-7b-instruct', log })
 * const { text, usage } = await ai.chat({ messages: [{ role: 'user', content: 'Hello' }], maxTokens: 200 })
 */
export class OpenAiCompatibleProvider implements AiProvider {
  readonly name = 'openai-compatible'
  readonly model: string
  private readonly baseUrl: string
  private readonly embeddingModel: string
  private readonly timeoutMs: number
  private readonly retries: number
  private readonly sleep: (ms: number) => Promise<void>

  constructor(private readonly deps: OpenAiCompatibleDeps) {
    this.baseUrl = deps.baseUrl.replace(/\/+$/, '')
    this.model = deps.model
    this.embeddingModel = deps.embeddingModel || deps.model
    this.timeoutMs = deps.timeoutMs ?? 30_000
    this.retries = deps.retries ?? 2
    this.sleep = deps.sleep ?? ((ms) => Bun.sleep(ms))
  }

  async chat(input: ChatInput): Promise<ChatResult> {
    const timer = new CallTimer(this.timeoutMs, input.signal)
    try {
      const res = await this.post('/chat/completions', this.chatBody(input, false), timer, input.signal)
      const json = await this.readJson(res, timer, input.signal)
      const { text, usage } = this.checked(() => readCompletion(json, this.baseUrl))
      return { text, usage: usage ?? estimateUsage(input.messages, text) }
    } finally {
      timer.clear()
    }
  }

  chatStream(input: ChatInput): ChatStream {
    const stream = { usage: null as TokenUsage | null, [Symbol.asyncIterator]: () => run() }
    const run = async function* (this: OpenAiCompatibleProvider): AsyncGenerator<string> {
      const timer = new CallTimer(this.timeoutMs, input.signal)
      let text = ''
      let usage: TokenUsage | null = null
      try {
        const res = await this.post('/chat/completions', this.chatBody(input, true), timer, input.signal)
        if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
          // The server ignored `stream: true` and answered in one piece.
          const json = await this.readJson(res, timer, input.signal)
          ;({ text, usage } = this.checked(() => readCompletion(json, this.baseUrl)))
          if (text) yield text
        } else {
          for await (const chunk of this.readEvents(res, timer, input.signal)) {
            usage = readUsage(chunk.usage) ?? usage
            const delta = chunk.choices?.[0]?.delta?.content
            if (typeof delta !== 'string' || delta === '') continue
            text += delta
            timer.clear() // the caller's pace is not the provider's silence
            yield delta
          }
        }
        stream.usage = usage ?? estimateUsage(input.messages, text)
      } finally {
        timer.clear()
      }
    }.bind(this)
    return stream
  }

  async embed(texts: string[]): Promise<number[][]> {
    if (texts.length === 0) return []
    const timer = new CallTimer(this.timeoutMs)
    try {
      const res = await this.post('/embeddings', { model: this.embeddingModel, input: texts, encoding_format: 'float' }, timer)
      const json = await this.readJson(res, timer)
      return this.checked(() => readEmbeddings(json, texts.length, this.baseUrl))
    } finally {
      timer.clear()
    }
  }

  private chatBody(input: ChatInput, stream: boolean) {
    return {
      model: this.model,
      messages: input.messages.map(({ role, content }) => ({ role, content })),
      ...(input.maxTokens !== undefined && { max_tokens: input.maxTokens }),
      ...(input.temperature !== undefined && { temperature: input.temperature }),
      stream,
      // Servers that honour it send the token counts in a last chunk; others ignore it.
      ...(stream && { stream_options: { include_usage: true } }),
    }
  }

  /**
   * POSTs until a 2xx answer arrives, retrying connection failures, 429 and 5xx; throws the
   * classified failure otherwise. A timeout is not retried: the caller has already waited.
   */
  private async post(path: string, body: unknown, timer: CallTimer, caller?: AbortSignal): Promise<Response> {
    const url = this.baseUrl + path
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': `berth/${VERSION}` }
    if (this.deps.apiKey) headers.authorization = `Bearer ${this.deps.apiKey}`
    const payload = JSON.stringify(body)
    for (let attempt = 1; ; attempt++) {
      timer.restart()
      let failure: AiProviderError
      let waitMs: number
      try {
        const res = await fetch(url, { method: 'POST', headers, body: payload, signal: timer.signal })
        if (res.ok) return res
        failure = await this.httpFailure(res, attempt, timer)
        const retryAfter = failure.retryAfterSeconds
        if (retryAfter !== undefined && retryAfter > MAX_RETRY_AFTER_SECONDS) throw failure
        waitMs = retryAfter !== undefined ? retryAfter * 1000 : backoffMs(attempt - 1)
      } catch (err) {
        if (caller?.aborted) throw caller.reason
        if (timer.expired) throw this.giveUp(this.timeoutError(false), path)
        if (err instanceof AiProviderError) throw this.giveUp(err, path)
        failure = new AiProviderError('unavailable', `Could not connect to the AI provider at ${this.baseUrl} (${errorCode(err)}) after ${attempt} attempt${attempt === 1 ? '' : 's'}`, { cause: err })
        waitMs = backoffMs(attempt - 1)
      }
      const retryable = failure.kind === 'unavailable' || failure.kind === 'rate_limited'
      if (!retryable || attempt > this.retries) throw this.giveUp(failure, path)
      this.deps.log.warn('AI provider call failed; retrying', { provider: this.baseUrl, path, attempt, status: failure.status, kind: failure.kind, wait_ms: waitMs })
      timer.clear()
      await this.sleep(waitMs)
      if (caller?.aborted) throw caller.reason
    }
  }

  /** A non-2xx answer as an error; `retryAfterSeconds` set on 429 when the provider named a time. */
  private async httpFailure(res: Response, attempt: number, timer: CallTimer): Promise<AiProviderError> {
    const status = res.status
    const detail = upstreamMessage(await res.text().catch(() => ''))
    if (timer.expired) return this.timeoutError(false)
    const suffix = detail ? `: ${detail}` : ''
    const tries = `after ${attempt} attempt${attempt === 1 ? '' : 's'}`
    if (status === 429) {
      const retryAfterSeconds = parseRetryAfter(res.headers)
      const wait = retryAfterSeconds === undefined ? '' : `; it asks to wait ${retryAfterSeconds} s`
      return new AiProviderError('rate_limited', `The AI provider at ${this.baseUrl} is rate-limiting Berth (HTTP 429) ${tries}${wait}${suffix}`, { status, retryAfterSeconds })
    }
    if (status >= 500) return new AiProviderError('unavailable', `The AI provider at ${this.baseUrl} failed with HTTP ${status} ${tries}${suffix}`, { status })
    if (status === 401 || status === 403) {
      return new AiProviderError('refused', `The AI provider at ${this.baseUrl} refused Berth's API key (HTTP ${status}); the hoster must check ai.api_key${suffix}`, { status })
    }
    if (status === 404) {
      return new AiProviderError('refused', `The AI provider at ${this.baseUrl} answered HTTP 404 for model '${this.model}'; the hoster must check ai.base_url (usually ending in /v1) and ai.model${suffix}`, { status })
    }
    return new AiProviderError('refused', `The AI provider at ${this.baseUrl} refused the request (HTTP ${status})${suffix}`, { status })
  }

  private timeoutError(streaming: boolean) {
    const seconds = formatSeconds(this.timeoutMs)
    return new AiProviderError('timeout', streaming
      ? `The AI provider at ${this.baseUrl} stopped sending its answer for ${seconds} s`
      : `The AI provider at ${this.baseUrl} did not answer within ${seconds} s`)
  }

  /** Logs a final failure (the hoster's only trace of it: the API shows the agent the message) and returns it. */
  private giveUp(err: AiProviderError, path: string): AiProviderError {
    this.deps.log.warn('AI provider call failed', { provider: this.baseUrl, path, kind: err.kind, status: err.status, error: err.message })
    return err
  }

  /** Runs a response reader; its `bad_response` is logged like every final failure. */
  private checked<T>(read: () => T): T {
    try {
      return read()
    } catch (err) {
      throw err instanceof AiProviderError ? this.giveUp(err, 'response') : err
    }
  }

  /** The body of a 2xx answer as JSON; a body that is not JSON is `bad_response`. */
  private async readJson(res: Response, timer: CallTimer, caller?: AbortSignal): Promise<unknown> {
    let text: string
    try {
      text = await res.text()
    } catch (err) {
      throw this.readFailure(err, timer, caller, false)
    }
    try {
      return JSON.parse(text)
    } catch {
      throw this.giveUp(new AiProviderError('bad_response', `The AI provider at ${this.baseUrl} answered something that is not JSON: ${upstreamMessage(text) || 'an empty body'}`, { status: res.status }), 'response')
    }
  }

  /** The server-sent events of a streamed completion (WHATWG HTML, "Server-sent events"), up to `[DONE]`. */
  private async *readEvents(res: Response, timer: CallTimer, caller?: AbortSignal): AsyncGenerator<StreamChunk> {
    if (!res.body) throw new AiProviderError('bad_response', `The AI provider at ${this.baseUrl} sent an empty stream`, { status: res.status })
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
    let buffer = ''
    let data: string[] = []
    /** A choice with a finish_reason was seen: the answer is whole even if `[DONE]` never comes. */
    let finished = false
    try {
      for (let ended = false; !ended;) {
        timer.restart()
        let piece: { done: boolean; value?: string }
        try {
          piece = await reader.read()
        } catch (err) {
          throw this.readFailure(err, timer, caller, true)
        }
        ended = piece.done
        buffer += piece.value ?? ''
        const lines = buffer.split(/\r\n|\r|\n/)
        // A partial last line waits for the next piece; at the end it closes the last event.
        buffer = ended ? '' : lines.pop() ?? ''
        if (ended) lines.push('')
        for (const line of lines) {
          if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5))
          if (line !== '' || data.length === 0) continue
          const event = data.join('\n')
          data = []
          if (event.trim() === '[DONE]') return
          const chunk = this.parseChunk(event)
          finished ||= chunk.choices?.some((c) => typeof c?.finish_reason === 'string') ?? false
          yield chunk
        }
      }
      if (finished) return
      throw this.giveUp(new AiProviderError('unavailable', `The AI provider at ${this.baseUrl} closed the stream before the answer was complete`), 'stream')
    } finally {
      reader.cancel().catch(() => {})
    }
  }

  private parseChunk(event: string): StreamChunk {
    let chunk: unknown
    try {
      chunk = JSON.parse(event)
    } catch {
      throw this.giveUp(new AiProviderError('bad_response', `The AI provider at ${this.baseUrl} sent a stream event that is not JSON: ${upstreamMessage(event)}`), 'stream')
    }
    if (isObject(chunk) && chunk.error !== undefined) {
      throw this.giveUp(new AiProviderError('unavailable', `The AI provider at ${this.baseUrl} failed in the middle of its answer: ${upstreamMessage(event)}`), 'stream')
    }
    if (!isObject(chunk) || (!Array.isArray(chunk.choices) && !isObject(chunk.usage))) {
      throw this.giveUp(new AiProviderError('bad_response', `The AI provider at ${this.baseUrl} sent a stream chunk without choices: ${upstreamMessage(event)}`), 'stream')
    }
    return chunk as StreamChunk
  }

  private readFailure(err: unknown, timer: CallTimer, caller: AbortSignal | undefined, streaming: boolean): unknown {
    if (caller?.aborted) return caller.reason
    if (timer.expired) return this.giveUp(this.timeoutError(streaming), 'response')
    return this.giveUp(new AiProviderError('unavailable', `The AI provider at ${this.baseUrl} broke off its answer (${errorCode(err)})`, { cause: err }), 'response')
  }
}

interface StreamChunk {
  choices?: ({ delta?: { content?: unknown }; finish_reason?: unknown } | null)[]
  usage?: unknown
}

/**
 * One attempt's time limit, restartable (each attempt, each streamed piece), combined with the
 * caller's signal. `expired` tells our timeout from the caller's abort.
 */
class CallTimer {
  private controller = new AbortController()
  private handle: ReturnType<typeof setTimeout> | undefined
  readonly signal: AbortSignal

  constructor(private readonly ms: number, caller?: AbortSignal) {
    this.signal = caller ? AbortSignal.any([caller, this.controller.signal]) : this.controller.signal
  }

  get expired() {
    return this.controller.signal.aborted
  }

  restart() {
    this.clear()
    this.handle = setTimeout(() => this.controller.abort(new DOMException(`no answer within ${this.ms} ms`, 'TimeoutError')), this.ms)
  }

  clear() {
    clearTimeout(this.handle)
  }
}

/** `choices[0].message.content` and the usage of a chat completion; throws `bad_response` otherwise. */
function readCompletion(json: unknown, baseUrl: string): { text: string; usage: TokenUsage | null } {
  const bad = (what: string) => new AiProviderError('bad_response', `The AI provider at ${baseUrl} sent a chat completion ${what}`, { status: 200 })
  if (!isObject(json) || !Array.isArray(json.choices)) throw bad('without choices')
  const first: unknown = json.choices[0]
  if (!isObject(first)) throw bad('with an empty choices list')
  const content = isObject(first.message) ? first.message.content : undefined
  if (typeof content !== 'string') throw bad('whose choices[0].message.content is not text')
  return { text: content, usage: readUsage(json.usage) }
}

/** OpenAI's `usage` object, when it is one. */
function readUsage(raw: unknown): TokenUsage | null {
  if (!isObject(raw)) return null
  const count = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null)
  const promptTokens = count(raw.prompt_tokens)
  const completionTokens = count(raw.completion_tokens)
  if (promptTokens === null || completionTokens === null) return null
  return { promptTokens, completionTokens, totalTokens: count(raw.total_tokens) ?? promptTokens + completionTokens }
}

/** About 4 characters a token (OpenAI's rule of thumb for English), for providers that send no counts. */
function estimateUsage(messages: ChatMessage[], answer: string): TokenUsage {
  const promptTokens = Math.ceil(messages.reduce((n, m) => n + m.content.length, 0) / 4)
  const completionTokens = Math.ceil(answer.length / 4)
  return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens, estimated: true }
}

/** `data[].embedding` in input order (by `index`), one per text, all of one dimension. */
function readEmbeddings(json: unknown, count: number, baseUrl: string): number[][] {
  const bad = (what: string) => new AiProviderError('bad_response', `The AI provider at ${baseUrl} sent embeddings ${what}`, { status: 200 })
  if (!isObject(json) || !Array.isArray(json.data)) throw bad('without a data list')
  if (json.data.length !== count) throw bad(`for ${json.data.length} texts instead of ${count}`)
  const items = json.data.map((item: unknown, i) => {
    if (!isObject(item) || !Array.isArray(item.embedding) || item.embedding.length === 0 || !item.embedding.every((x) => typeof x === 'number' && Number.isFinite(x))) {
      throw bad(`whose item ${i} is not a list of numbers`)
    }
    return { index: typeof item.index === 'number' ? item.index : i, vector: item.embedding as number[] }
  })
  items.sort((a, b) => a.index - b.index)
  if (items.some((item, i) => item.index !== i)) throw bad('with indexes that do not match the texts')
  if (items.some((item) => item.vector.length !== items[0]!.vector.length)) throw bad('of different dimensions')
  return items.map((item) => item.vector)
}

/**
 * Seconds to wait from `retry-after-ms` (OpenAI's) or `Retry-After` (RFC 9110 section 10.2.3:
 * delay-seconds or an HTTP-date); undefined when neither is readable.
 */
export function parseRetryAfter(headers: Headers, now = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms')
  if (ms && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms) / 1000)
  const value = headers.get('retry-after')?.trim()
  if (!value) return undefined
  if (/^\d+$/.test(value)) return Number(value)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000))
}

/** The provider's own error sentence (`{"error": {"message": ...}}` and the like), one line, bounded. */
function upstreamMessage(body: string): string {
  let text = body
  try {
    const json: unknown = JSON.parse(body)
    const error = isObject(json) ? json.error ?? json.message ?? json.detail : undefined
    const message = isObject(error) ? error.message : error
    if (typeof message === 'string') text = message
  } catch {
    // not JSON: the text itself
  }
  const line = text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim()
  return line.length > UPSTREAM_MESSAGE_CHARS ? `${line.slice(0, UPSTREAM_MESSAGE_CHARS)}...` : line
}

/** The system error code of a failed fetch (ECONNREFUSED, ENOTFOUND, ...), for the message. */
function errorCode(err: unknown): string {
  const code = isObject(err) ? err.code : undefined
  return typeof code === 'string' ? code : err instanceof Error ? err.name : 'network error'
}

const formatSeconds = (ms: number) => (ms % 1000 === 0 ? String(ms / 1000) : (ms / 1000).toFixed(1))

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
