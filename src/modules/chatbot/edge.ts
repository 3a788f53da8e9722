import type { ModuleEdgeHook, ModuleRequest } from '../edge'
import type { ChatbotService } from './service'
import { CHATBOT_ASK_PATH, CHATBOT_SCRIPT_PATH, WIDGET_JS, WIDGET_TAG } from './widget'

// nosniff: an answer is JSON holding text (the model's included), never a page a browser could render.
const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' }

/**
 * The chatbot at the edge: its script and ask endpoint on the site's own host, and the script's
 * tag in the head of the site's pages.
 */
export function chatbotEdge(chatbot: Pick<ChatbotService, 'ask'>): ModuleEdgeHook {
  return {
    module: 'chatbot',
    answer: ({ request, path, site, visitor }) => {
      if (path === CHATBOT_SCRIPT_PATH && (request.method === 'GET' || request.method === 'HEAD')) {
        return new Response(request.method === 'HEAD' ? null : WIDGET_JS, { headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=300', 'x-content-type-options': 'nosniff' } })
      }
      if (path === CHATBOT_ASK_PATH) return ask(chatbot, request, site, visitor)
      return undefined
    },
    addToPages: () => ({ widget: WIDGET_TAG }),
  }
}

/** A visitor's question, POSTed as JSON: the answer, or the API's error envelope. */
async function ask(chatbot: Pick<ChatbotService, 'ask'>, request: Request, site: ModuleRequest['site'], visitor: string): Promise<Response> {
  if (request.method !== 'POST') return envelopeError(405, 'METHOD_NOT_ALLOWED', 'POST a JSON body {"question": "..."}.', null, { allow: 'POST' })
  let question: unknown
  try {
    const text = await request.text()
    if (text.length > 4096) return envelopeError(413, 'PAYLOAD_TOO_LARGE', 'The question is too long; ask in at most 500 characters.', 'question')
    question = (JSON.parse(text) as { question?: unknown }).question
  } catch {
    return envelopeError(400, 'VALIDATION_ERROR', 'Send a JSON body {"question": "..."}.', null)
  }
  if (typeof question !== 'string') return envelopeError(422, 'VALIDATION_ERROR', '"question" must be a string of 1 to 500 characters.', 'question')
  const answer = await chatbot.ask(site, question, visitor)
  if ('refused' in answer) {
    return answer.refused === 'too_many'
      ? envelopeError(429, 'RATE_LIMITED', answer.message, null, { 'retry-after': String(answer.retryAfter ?? 60) })
      : envelopeError(422, 'VALIDATION_ERROR', answer.message, 'question')
  }
  return new Response(JSON.stringify({ ok: true, data: answer, meta: meta() }), { headers: JSON_HEADERS })
}

const meta = () => ({ request_id: crypto.randomUUID(), timestamp: new Date().toISOString() })

/** The API's error envelope, for the module endpoints on a site's host. */
function envelopeError(status: number, code: string, message: string, param: string | null, headers: Record<string, string> = {}): Response {
  const m = meta()
  return new Response(JSON.stringify({ ok: false, error: { code, message, param }, meta: m }), { status, headers: { ...JSON_HEADERS, 'x-request-id': m.request_id, ...headers } })
}
