import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { fakeEmbedding, fakeTokens, startFakeOpenAi, type FakeOpenAi } from '../../../test/fakes/openai-server'
import { loadConfig } from '../../config/config'
import { memoryLogger } from '../../lib/logger'
import { OpenAiCompatibleProvider, type OpenAiCompatibleDeps } from './openai'
import { selectAiProvider } from './select'
import { AiProviderError, type ChatMessage } from './types'

/**
 * The OpenAI-compatible driver over real HTTP (loopback) against the FAKE server in test/fakes:
 * no model runs on the machines the tests run on.
 */
let fake: FakeOpenAi
/** The back-off waits the driver asked for, instead of sleeping through them. */
let waits: number[]
let log: ReturnType<typeof memoryLogger>

const make = (over: Partial<OpenAiCompatibleDeps> = {}) =>
  new OpenAiCompatibleProvider({
    baseUrl: fake.url, apiKey: '', model: 'fake-chat', log, timeoutMs: 5_000,
    sleep: async (ms) => {
      waits.push(ms)
    },
    ...over,
  })

const question: ChatMessage[] = [
  { role: 'system', content: 'Answer from the context only.' },
  { role: 'user', content: 'Context: refunds are made within 30 days.\nQuestion: how long do refunds take?' },
]
const expectedAnswer = `Fake answer to: ${question[1]!.content}`

/** The AiProviderError a promise rejects with (fails the test if it resolves or throws another error). */
async function failure(promise: Promise<unknown>): Promise<AiProviderError> {
  const err = await promise.then(() => undefined, (e: unknown) => e)
  expect(err).toBeInstanceOf(AiProviderError)
  return err as AiProviderError
}

async function collect(stream: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = []
  for await (const delta of stream) out.push(delta)
  return out
}

/** A port nothing listens on: a server's, after it stopped. */
async function closedPort(): Promise<number> {
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') })
  const port = server.port!
  await server.stop(true)
  return port
}

beforeAll(async () => {
  fake = await startFakeOpenAi()
})
afterAll(async () => {
  await fake.stop()
})
beforeEach(() => {
  fake.reset()
  waits = []
  log = memoryLogger()
})

describe('chat', () => {
  it('returns the answer and the token counts the provider sent', async () => {
    const result = await make().chat({ messages: question, maxTokens: 200, temperature: 0.2 })
    expect(result.text).toBe(expectedAnswer)
    const prompt = fakeTokens(question[0]!.content) + fakeTokens(question[1]!.content)
    expect(result.usage).toEqual({ promptTokens: prompt, completionTokens: fakeTokens(expectedAnswer), totalTokens: prompt + fakeTokens(expectedAnswer) })
    expect(fake.requests).toHaveLength(1)
    expect(fake.requests[0]).toMatchObject({ method: 'POST', path: '/v1/chat/completions' })
    expect(fake.requests[0]!.body).toEqual({ model: 'fake-chat', messages: question, max_tokens: 200, temperature: 0.2, stream: false })
  })

  it('uses what the responder answers', async () => {
    fake.responder = (messages) => `${messages.length} messages, last by ${messages.at(-1)!.role}`
    expect((await make().chat({ messages: question })).text).toBe('2 messages, last by user')
  })

  it('sends Authorization only when there is a key, and never logs the key', async () => {
    await make({ apiKey: 'sk-test-secret' }).chat({ messages: question })
    await make({ apiKey: '' }).chat({ messages: question })
    expect(fake.requests[0]!.headers.authorization).toBe('Bearer sk-test-secret')
    expect(fake.requests[1]!.headers).not.toHaveProperty('authorization')
    fake.failNext(500, Infinity)
    await failure(make({ apiKey: 'sk-test-secret' }).chat({ messages: question }))
    expect(log.lines.length).toBeGreaterThan(0)
    expect(JSON.stringify(log.lines)).not.toContain('sk-test-secret')
  })

  it("calls a wrong key 'refused' and names ai.api_key", async () => {
    const locked = await startFakeOpenAi({ apiKey: 'sk-right' })
    try {
      const err = await failure(make({ baseUrl: locked.url, apiKey: 'sk-wrong' }).chat({ messages: question }))
      expect(err).toMatchObject({ kind: 'refused', status: 401 })
      expect(err.message).toContain('ai.api_key')
      expect(err.message).not.toContain('sk-wrong')
      expect(locked.requests).toHaveLength(1)
      expect((await make({ baseUrl: locked.url, apiKey: 'sk-right' }).chat({ messages: question })).text).toBe(expectedAnswer)
    } finally {
      await locked.stop()
    }
  })
})

describe('chatStream', () => {
  it('yields the deltas in order, which join into the non-streamed answer, and reads the usage chunk', async () => {
    const provider = make()
    const whole = await provider.chat({ messages: question })
    const stream = provider.chatStream({ messages: question })
    expect(stream.usage).toBeNull()
    const deltas = await collect(stream)
    expect(deltas.length).toBeGreaterThan(5)
    expect(deltas[0]).toBe('Fake ')
    expect(deltas.join('')).toBe(whole.text)
    expect(stream.usage).toEqual(whole.usage)
    expect(fake.requests[1]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } })
  })

  it('estimates the usage when the server sends no counts', async () => {
    const quiet = await startFakeOpenAi({ streamUsage: false })
    try {
      const stream = make({ baseUrl: quiet.url }).chatStream({ messages: [{ role: 'user', content: 'x'.repeat(40) }] })
      const text = (await collect(stream)).join('')
      expect(text).toBe(`Fake answer to: ${'x'.repeat(40)}`)
      expect(stream.usage).toEqual({ promptTokens: 10, completionTokens: Math.ceil(text.length / 4), totalTokens: 10 + Math.ceil(text.length / 4), estimated: true })
    } finally {
      await quiet.stop()
    }
  })

  it('retries a 503 before the stream starts', async () => {
    fake.failNext(503)
    expect((await collect(make().chatStream({ messages: question }))).join('')).toBe(expectedAnswer)
    expect(fake.requests).toHaveLength(2)
    expect(waits).toEqual([250])
  })

  it("fails with 'timeout' when the answer stops coming, after the deltas already sent", async () => {
    fake.chunkDelayMs = 3_000
    const received: string[] = []
    const started = Date.now()
    const err = await failure((async () => {
      for await (const delta of make({ timeoutMs: 300 }).chatStream({ messages: question })) received.push(delta)
    })())
    expect(err.kind).toBe('timeout')
    expect(err.message).toBe(`The AI provider at ${fake.url} stopped sending its answer for 0.3 s`)
    expect(received).toEqual(['Fake '])
    expect(Date.now() - started).toBeLessThan(2_000)
  })

  it('does not count a slow reader as a silent provider', async () => {
    const deltas: string[] = []
    fake.chunkDelayMs = 50
    for await (const delta of make({ timeoutMs: 300 }).chatStream({ messages: question })) {
      if (deltas.length === 0) await Bun.sleep(600)
      deltas.push(delta)
    }
    expect(deltas.join('')).toBe(expectedAnswer)
  })

  it("accepts a stream that finished without [DONE], and calls one cut short 'unavailable'", async () => {
    const event = (finish: string | null, content?: string) => `data: ${JSON.stringify({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: content === undefined ? {} : { content }, finish_reason: finish }] })}\n\n`
    let body = ''
    const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(body, { headers: { 'content-type': 'text/event-stream' } }) })
    try {
      const provider = make({ baseUrl: `http://127.0.0.1:${server.port}/v1` })
      body = event(null, 'Hello') + event(null, ' world') + event('stop')
      expect(await collect(provider.chatStream({ messages: question }))).toEqual(['Hello', ' world'])
      body = event(null, 'Hello') + event(null, ' wor')
      const err = await failure(collect(provider.chatStream({ messages: question })))
      expect(err.kind).toBe('unavailable')
      expect(err.message).toContain('closed the stream before the answer was complete')
    } finally {
      await server.stop(true)
    }
  })

  it('stops cleanly when the caller stops reading', async () => {
    for await (const delta of make().chatStream({ messages: question })) {
      expect(delta).toBe('Fake ')
      break
    }
    expect(fake.requests).toHaveLength(1)
  })
})

describe('embed', () => {
  it('answers one vector per text, in order, of the model dimension', async () => {
    const texts = ['refunds within 30 days', 'shipping to Canada', 'refunds']
    const vectors = await make({ embeddingModel: 'fake-embed' }).embed(texts)
    expect(vectors).toHaveLength(3)
    for (const v of vectors) expect(v).toHaveLength(64)
    expect(vectors).toEqual(texts.map((t) => fakeEmbedding(t)))
    expect(fake.requests[0]).toMatchObject({ path: '/v1/embeddings', body: { model: 'fake-embed', input: texts } })
  })

  it('uses the chat model without an embedding model, and calls nobody for no texts', async () => {
    expect(await make().embed([])).toEqual([])
    expect(fake.requests).toHaveLength(0)
    await make({ embeddingModel: null }).embed(['a'])
    expect(fake.requests[0]!.body).toMatchObject({ model: 'fake-chat' })
  })

  it("calls a count that does not match the texts 'bad_response'", async () => {
    fake.malformNext(JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }] }))
    const err = await failure(make().embed(['one', 'two']))
    expect(err.kind).toBe('bad_response')
    expect(err.message).toContain('for 1 texts instead of 2')
  })
})

describe('retries and failures', () => {
  it('retries a 500 and succeeds', async () => {
    fake.failNext(500)
    expect((await make().chat({ messages: question })).text).toBe(expectedAnswer)
    expect(fake.requests).toHaveLength(2)
    expect(waits).toEqual([250])
    expect(log.lines).toContainEqual(expect.objectContaining({ level: 'warn', msg: 'AI provider call failed; retrying', status: 500, attempt: 1 }))
  })

  it("gives up on a 500 every time as 'unavailable' after retries + 1 requests", async () => {
    fake.failNext(500, Infinity)
    const err = await failure(make({ retries: 2 }).chat({ messages: question }))
    expect(err).toMatchObject({ kind: 'unavailable', status: 500 })
    expect(err.message).toBe(`The AI provider at ${fake.url} failed with HTTP 500 after 3 attempts: Fake failure with HTTP 500`)
    expect(fake.requests).toHaveLength(3)
    expect(waits).toEqual([250, 1000])
  })

  it('waits between attempts with the real clock by default', async () => {
    fake.failNext(502)
    const started = Date.now()
    await new OpenAiCompatibleProvider({ baseUrl: fake.url, apiKey: '', model: 'fake-chat', log }).chat({ messages: question })
    expect(Date.now() - started).toBeGreaterThanOrEqual(240)
    expect(fake.requests).toHaveLength(2)
  })

  it('honours Retry-After on a 429', async () => {
    fake.rateLimitNext(2)
    expect((await make().chat({ messages: question })).text).toBe(expectedAnswer)
    expect(fake.requests).toHaveLength(2)
    expect(waits).toEqual([2000])
  })

  it("fails at once as 'rate_limited' when Retry-After is longer than Berth waits", async () => {
    fake.rateLimitNext(120)
    const err = await failure(make().chat({ messages: question }))
    expect(err).toMatchObject({ kind: 'rate_limited', status: 429, retryAfterSeconds: 120 })
    expect(err.message).toContain('asks to wait 120 s')
    expect(fake.requests).toHaveLength(1)
    expect(waits).toEqual([])
  })

  it("gives up on a 429 every time as 'rate_limited'", async () => {
    fake.rateLimitNext(1, Infinity)
    const err = await failure(make({ retries: 1 }).chat({ messages: question }))
    expect(err).toMatchObject({ kind: 'rate_limited', status: 429, retryAfterSeconds: 1 })
    expect(fake.requests).toHaveLength(2)
    expect(waits).toEqual([1000])
  })

  it.each([400, 404, 422])("does not retry a %i: 'refused'", async (status) => {
    fake.failNext(status, Infinity)
    const err = await failure(make().chat({ messages: question }))
    expect(err).toMatchObject({ kind: 'refused', status })
    expect(err.message).toContain(`HTTP ${status}`)
    expect(fake.requests).toHaveLength(1)
    expect(waits).toEqual([])
  })

  it('names ai.model on a 404', async () => {
    const err = await failure(make({ baseUrl: fake.url.replace(/\/v1$/, '/v2') }).chat({ messages: question }))
    expect(err).toMatchObject({ kind: 'refused', status: 404 })
    expect(err.message).toContain("model 'fake-chat'")
    expect(err.message).toContain('ai.base_url (usually ending in /v1) and ai.model')
  })

  it("fails a slow server with 'timeout' within about timeoutMs, without retrying", async () => {
    fake.delayMs = 3_000
    const started = Date.now()
    const err = await failure(make({ timeoutMs: 300 }).chat({ messages: question }))
    const elapsed = Date.now() - started
    expect(err).toMatchObject({ kind: 'timeout', status: null })
    expect(err.message).toBe(`The AI provider at ${fake.url} did not answer within 0.3 s`)
    expect(elapsed).toBeGreaterThanOrEqual(280)
    expect(elapsed).toBeLessThan(1_500)
    expect(fake.requests).toHaveLength(1)
  })

  it("calls a completion without choices 'bad_response', without retrying", async () => {
    fake.malformNext()
    const err = await failure(make().chat({ messages: question }))
    expect(err).toMatchObject({ kind: 'bad_response', status: 200 })
    expect(err.message).toContain('without choices')
    expect(fake.requests).toHaveLength(1)
  })

  it("calls an answer that is not JSON 'bad_response'", async () => {
    fake.malformNext('<html>Bad gateway page</html>')
    const err = await failure(make().chat({ messages: question }))
    expect(err.kind).toBe('bad_response')
    expect(err.message).toContain('not JSON')
    fake.malformNext('{"choices":[{"message":{"content":null}}]}')
    expect((await failure(make().chat({ messages: question }))).kind).toBe('bad_response')
  })

  it("calls a stream without choices 'bad_response'", async () => {
    fake.malformNext('{"id":"x"}')
    const err = await failure(collect(make().chatStream({ messages: question })))
    expect(err.kind).toBe('bad_response')
  })

  it("calls a connection refused 'unavailable', after retrying", async () => {
    const port = await closedPort()
    const err = await failure(make({ baseUrl: `http://127.0.0.1:${port}/v1` }).chat({ messages: question }))
    expect(err).toMatchObject({ kind: 'unavailable', status: null })
    expect(err.message).toBe(`Could not connect to the AI provider at http://127.0.0.1:${port}/v1 (ECONNREFUSED) after 3 attempts`)
    expect(waits).toEqual([250, 1000])
  })

  it("throws the caller's abort as is, and does not retry it", async () => {
    fake.delayMs = 2_000
    const controller = new AbortController()
    const reason = new Error('the visitor left')
    setTimeout(() => controller.abort(reason), 100)
    const err = await make().chat({ messages: question, signal: controller.signal }).then(() => null, (e: unknown) => e)
    expect(err).toBe(reason)
    expect(fake.requests).toHaveLength(1)
    expect(waits).toEqual([])
  })
})

describe('selectAiProvider', () => {
  it('answers null without ai.base_url, and a working provider with one', async () => {
    expect(selectAiProvider(loadConfig({ file: null, env: {} }), log)).toBeNull()
    const config = loadConfig({ file: null, env: { BERTH_AI_BASE_URL: `${fake.url}/`, BERTH_AI_MODEL: 'fake-chat', BERTH_AI_API_KEY: 'sk-x', BERTH_AI_TIMEOUT_SECONDS: '1' } })
    const provider = selectAiProvider(config, log)!
    expect(provider).toMatchObject({ name: 'openai-compatible', model: 'fake-chat' })
    expect((await provider.chat({ messages: question })).text).toBe(expectedAnswer)
    expect(fake.requests[0]!.headers.authorization).toBe('Bearer sk-x')
    fake.delayMs = 3_000
    expect((await failure(provider.chat({ messages: question }))).message).toBe(`The AI provider at ${fake.url} did not answer within 1 s`)
  })
})
