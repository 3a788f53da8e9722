/**
 * The AI provider: a language model and an embedding model behind the OpenAI-compatible chat and
 * embeddings API (design.md, "AI modules"). The hoster configures one (`[ai]` in the config: any
 * hosted service, or a local llama.cpp or vLLM server); there is no embedded default, so callers
 * get `null` from selectAiProvider and must work, or say why they cannot, without one.
 *
 * Contracts, for every implementation:
 * - Every failure is an AiProviderError with a `kind`; nothing else escapes, except the caller's
 *   own abort (when `input.signal` aborts, its reason is thrown as is).
 * - `timeout` means no answer within the configured time (the API answers 504); every other kind
 *   answers 502. The message names the provider and says what happened, never the API key.
 * - Calls are retried inside the driver only where repeating cannot hurt: connection failures,
 *   429 and 5xx, before any answer text was received. A caller never needs its own retry loop.
 * - Nothing is cached or remembered between calls: each call is independent.
 */
export interface AiProvider {
  /** The driver, e.g. `openai-compatible`. */
  readonly name: string
  /** The chat model asked, as configured (`ai.model`). */
  readonly model: string
  /** One chat completion: the whole answer and the tokens it cost. */
  chat(input: ChatInput): Promise<ChatResult>
  /**
   * The same completion, streamed: yields the answer's text deltas in order; joined, they are
   * what `chat` would have returned. The request is sent when iteration starts; stopping the
   * iteration early (`break`) closes it. Once the iteration has ended, `usage` holds the cost.
   */
  chatStream(input: ChatInput): ChatStream
  /**
   * One vector per text, in the order given, all of one dimension (`ai.embedding_model`, else
   * `ai.model`). An empty list answers an empty list without calling the provider.
   */
  embed(texts: string[]): Promise<number[][]>
}

export type ChatRole = 'system' | 'user' | 'assistant'

export interface ChatMessage {
  role: ChatRole
  content: string
}

export interface ChatInput {
  messages: ChatMessage[]
  /** Most tokens the answer may have (`max_tokens`); the provider's default when absent. */
  maxTokens?: number
  /** 0 to 2; the provider's default when absent. */
  temperature?: number
  /** Aborts the call; its reason is thrown and nothing is retried. */
  signal?: AbortSignal
}

export interface TokenUsage {
  promptTokens: number
  completionTokens: number
  totalTokens: number
  /**
   * Present when the provider sent no counts and Berth estimated them (about 4 characters a
   * token), so token budgets still move.
   */
  estimated?: true
}

export interface ChatResult {
  text: string
  usage: TokenUsage
}

/** The text deltas of a streamed answer; `usage` is null until the iteration has ended. */
export interface ChatStream extends AsyncIterable<string> {
  readonly usage: TokenUsage | null
}

/**
 * - `timeout`: no answer (or, streaming, no further text) within the configured time.
 * - `unavailable`: the provider could not be reached, failed (5xx) or broke off, after retries.
 * - `refused`: the provider answered a 4xx other than 429: a bad key, an unknown model, a prompt
 *   too long. Not retried; repeating would get the same answer.
 * - `rate_limited`: 429 after retries, or a Retry-After longer than Berth waits.
 * - `bad_response`: an answer that is not the OpenAI-compatible shape (no `choices`, bad JSON).
 */
export type AiProviderErrorKind = 'timeout' | 'unavailable' | 'refused' | 'rate_limited' | 'bad_response'

/**
 * A failed call to the AI provider. `message` is written for the hoster and the agent, e.g.
 * "The AI provider at http://127.0.0.1:8000/v1 did not answer within 30 s".
 *
 * @example
 * try { await provider.chat({ messages }) } catch (err) {
 *   if (err instanceof AiProviderError) return answer(err.kind === 'timeout' ? 504 : 502, err.message)
 *   throw err
 * }
 */
export class AiProviderError extends Error {
  override readonly name = 'AiProviderError'
  /** The provider's HTTP status, when it answered one. */
  readonly status: number | null
  /** Seconds the provider asked to wait (Retry-After on a 429). */
  readonly retryAfterSeconds?: number

  constructor(readonly kind: AiProviderErrorKind, message: string, opts: { status?: number | null; retryAfterSeconds?: number; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause })
    this.status = opts.status ?? null
    if (opts.retryAfterSeconds !== undefined) this.retryAfterSeconds = opts.retryAfterSeconds
  }
}
