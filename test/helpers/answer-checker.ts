import Ajv2020 from 'ajv/dist/2020'
import addFormats from 'ajv-formats'

/**
 * Checks answers against the OpenAPI document the server publishes: the status must be one the
 * operation lists, and a JSON body must be valid against that status's schema. Requests that
 * match no operation (an unknown path, a wrong method) must answer the error envelope. The
 * test helpers run every answer through it, so the document and the server cannot drift, and a
 * route added later is covered with no test code of its own.
 */
export class AnswerChecker {
  private ajv: Ajv2020
  private operations: { method: string; pattern: RegExp; template: string; responses: Record<string, any> }[] = []
  private validators = new Map<string, ReturnType<Ajv2020['compile']>>()

  /**
   * One checker per document text in this worker: the unit files share their worker's modules
   * (vitest.config.ts), so a file gets the validators an earlier one compiled (ajv's compiling
   * was an eighth of the API files' time).
   */
  private static byDocument = new Map<string, AnswerChecker>()
  static of(documentText: string): AnswerChecker {
    let checker = AnswerChecker.byDocument.get(documentText)
    if (!checker) AnswerChecker.byDocument.set(documentText, (checker = new AnswerChecker(JSON.parse(documentText))))
    return checker
  }

  constructor(private doc: Record<string, any>) {
    this.ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true })
    addFormats(this.ajv)
    this.ajv.addSchema({ ...doc, $id: 'openapi' })
    const base = new URL(doc.servers?.[0]?.url ?? 'http://localhost/api/v1').pathname.replace(/\/$/, '')
    for (const [template, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      const pattern = new RegExp(`^${escape(base + template).replace(/\\\{\w+\\\}/g, '[^/]+')}$`)
      for (const [method, op] of Object.entries(ops)) this.operations.push({ method: method.toUpperCase(), pattern, template, responses: op.responses })
    }
  }

  /** Why the answer disagrees with the document, or null when it agrees. */
  problem(method: string, url: string, status: number, contentType: string | null, text: string): string | null {
    const path = new URL(url, 'http://localhost').pathname
    const op = this.operations.find((o) => o.method === method.toUpperCase() && o.pattern.test(path))
    const where = op ? `${op.method} ${op.template}` : `${method} ${path}`
    let schemaPointer: string
    if (!op) {
      // Not an operation: only the error envelope may answer (404 unknown route, 405 wrong method).
      if (status < 400) return null // the documents (openapi.json, docs), pay pages and redirects
      schemaPointer = '/components/schemas/Error'
    } else {
      let response = op.responses[String(status)]
      if (!response) return `${where} answered ${status}, which the document does not list (it lists ${Object.keys(op.responses).join(', ')})`
      if (response.$ref) response = this.resolve(response.$ref)
      const media = response.content?.['application/json']
      if (!media) return null
      schemaPointer = response === op.responses[String(status)]
        ? `/paths/${pointerEscape(op.template)}/${op.method.toLowerCase()}/responses/${status}/content/application~1json/schema`
        : `${response.__pointer}/content/application~1json/schema`
    }
    if (!contentType?.includes('application/json')) return `${where} answered ${status} with ${contentType ?? 'no content type'}, not JSON`
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      return `${where} answered ${status} with a body that is not JSON: ${text.slice(0, 200)}`
    }
    const validate = this.validator(schemaPointer)
    if (validate(body)) return null
    return `${where} answered ${status} with a body the document does not describe: ${this.ajv.errorsText(validate.errors)} in ${text.slice(0, 300)}`
  }

  /** Throws when the answer disagrees with the document. */
  check(method: string, url: string, status: number, contentType: string | null, text: string): void {
    const problem = this.problem(method, url, status, contentType, text)
    if (problem) throw new Error(`Answer not in openapi.json: ${problem}`)
  }

  private resolve(ref: string): any {
    const pointer = ref.replace(/^#/, '')
    const found = pointer.split('/').slice(1).reduce((node: any, part) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], this.doc)
    if (found && typeof found === 'object') Object.defineProperty(found, '__pointer', { value: pointer, enumerable: false, configurable: true })
    return found
  }

  private validator(pointer: string) {
    let v = this.validators.get(pointer)
    if (!v) {
      v = this.ajv.compile({ $ref: `openapi#${pointer}` })
      this.validators.set(pointer, v)
    }
    return v
  }
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
const pointerEscape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1')

const checkers = new Map<string, Promise<AnswerChecker>>()

/** The checker for the server known as `origin` (a URL, or any key), built once from its openapi.json. */
export function checkerFor(origin: string, fetchDoc: () => Promise<Record<string, any>>): Promise<AnswerChecker> {
  let c = checkers.get(origin)
  if (!c) {
    c = fetchDoc().then((doc) => new AnswerChecker(doc))
    checkers.set(origin, c)
  }
  return c
}
