/**
 * The MCP door's tools, made from the REST door's OpenAPI document (itself made from the route
 * table): one tool per operation, named `verb_noun` from the operation id (`listPlans` →
 * `list_plans`), whose input schema is the route's path, query and body schemas merged. A call
 * becomes the route's own request, handled by the same app (access, validation, rate limits,
 * services, errors), so a route added later is a tool with no code of its own and the two doors
 * cannot drift (design.md, Discovery and MCP).
 */

type Schema = Record<string, any>

export interface ToolDef {
  name: string
  title: string
  description: string
  inputSchema: { type: 'object'; properties: Record<string, Schema>; required: string[]; additionalProperties: false }
  annotations: { title: string; readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean }
  /** How to call the route. */
  method: string
  path: string
  pathParams: string[]
  queryParams: string[]
  bodyParams: string[]
  operationId: string
  access: string
}

/** A tool call's outcome, as MCP's CallToolResult. */
export interface ToolResult {
  [key: string]: unknown
  content: { type: 'text'; text: string }[]
  structuredContent?: Record<string, unknown>
  isError?: boolean
}

/**
 * Operations that destroy or overwrite something, or spend money, beyond the DELETE routes:
 * a client should confirm them with its user.
 */
const DESTRUCTIVE = new Set([
  'revokeKey', 'rotateKey', 'completeCheckout', 'cancelCheckout', 'writeFile', 'uploadFile', 'deleteFile',
  'restoreSnapshot', 'restoreBackup', 'scaleSite', 'deploySite', 'removeSshKey', 'deleteSite', 'deleteSnapshot',
  'changeSiteDns', 'removeDomainDns', 'registerDomain', 'linkDomain',
])
/** Operations whose repeat with the same input changes nothing more, beyond reads. */
const IDEMPOTENT = new Set([
  'updateCheckout', 'cancelCheckout', 'writeFile', 'uploadFile', 'makeDirectory', 'deleteFile', 'addSshKey', 'removeSshKey',
  'toggleModule', 'revokeKey', 'scaleSite', 'deleteSite', 'restoreSite', 'deleteSnapshot', 'requestClaim',
  'addDomainDns', 'linkDomain', 'updateDomainSettings',
])

/** What a parameter without its own description means, by name. */
const PARAM_TEXT: Record<string, string> = {
  tenant_slug: "The site's slug, as list_sites shows it.",
  plan_slug: 'A plan slug, as list_plans shows it.',
  checkout_id: 'The checkout session id that create_checkout returned.',
  checkout_secret: 'The checkout_secret that create_checkout returned; proves the session is yours.',
  key_id: 'The id of the key (list_keys) or SSH key (list_ssh_keys).',
  snapshot_id: 'A snapshot id, as list_snapshots shows it.',
  backup_id: 'A backup id, as list_backups shows it.',
  deployment_id: 'A deployment id, as list_deployments shows it.',
  module_name: 'A module name, as list_modules shows it.',
  domain_name: 'One of your domains, as list_domains shows it.',
}

/** `listPlans` → `list_plans`. */
export const toolName = (operationId: string) => operationId.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)

/** The tools of every operation in the document, in its order. */
export function toolsFromOpenApi(doc: Schema): ToolDef[] {
  const tools: ToolDef[] = []
  for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, Schema>>)) {
    for (const [method, op] of Object.entries(operations)) {
      if (!op.operationId) continue
      const properties: Record<string, Schema> = {}
      const required: string[] = []
      const pathParams: string[] = []
      const queryParams: string[] = []
      for (const p of (op.parameters ?? []) as Schema[]) {
        properties[p.name] = withDescription({ ...p.schema, ...(p.description ? { description: p.description } : {}) }, p.name)
        if (p.required) required.push(p.name)
        ;(p.in === 'path' ? pathParams : queryParams).push(p.name)
      }
      const body = op.requestBody?.content?.['application/json']?.schema as Schema | undefined
      const bodyParams: string[] = []
      for (const [name, schema] of Object.entries((body?.properties ?? {}) as Record<string, Schema>)) {
        properties[name] = withDescription(schema, name)
        bodyParams.push(name)
      }
      for (const name of (body?.required ?? []) as string[]) if (!required.includes(name)) required.push(name)
      const read = method === 'get'
      const name = toolName(op.operationId)
      const access = op['x-berth-access'] === 'public' ? (op['x-berth-optional-scope'] ? `no key (a key with the ${op['x-berth-optional-scope']} scope is optional)` : 'no key') : `a key with the ${op['x-berth-access']} scope`
      tools.push({
        name,
        title: op.summary ?? name,
        description: `${op.summary ?? name}. Needs ${access}. Same as ${method.toUpperCase()} ${path} of the REST API; errors come back with isError and the API's code, message and param.`,
        inputSchema: { type: 'object', properties, required, additionalProperties: false },
        annotations: {
          title: op.summary ?? name,
          readOnlyHint: read,
          destructiveHint: !read && (method === 'delete' || DESTRUCTIVE.has(op.operationId)),
          idempotentHint: read || method === 'delete' || IDEMPOTENT.has(op.operationId),
          openWorldHint: false,
        },
        method: method.toUpperCase(),
        path,
        pathParams,
        queryParams,
        bodyParams,
        operationId: op.operationId,
        access: op['x-berth-access'],
      })
    }
  }
  return tools
}

function withDescription(schema: Schema, name: string): Schema {
  if (schema.description) return schema
  return { ...schema, description: PARAM_TEXT[name] ?? `The ${name.replace(/_/g, ' ')}.` }
}

/** The REST request a tool call stands for; throws a message for the agent when an argument is unusable. */
export function requestFor(tool: ToolDef, args: Record<string, unknown>, origin: string, apiPrefix: string, headers: Record<string, string>): Request {
  for (const name of Object.keys(args)) {
    if (!(name in tool.inputSchema.properties)) throw new ToolInputError(`Unknown argument '${name}'; ${tool.name} takes ${Object.keys(tool.inputSchema.properties).join(', ') || 'no arguments'}.`, name)
  }
  let path = tool.path
  for (const name of tool.pathParams) {
    const value = args[name]
    if (value === undefined || value === null || value === '') throw new ToolInputError(`Missing argument '${name}': ${tool.inputSchema.properties[name]?.description ?? ''}`.trim(), name)
    path = path.replace(`{${name}}`, encodeURIComponent(String(value)))
  }
  const query = new URLSearchParams()
  for (const name of tool.queryParams) if (args[name] !== undefined) query.set(name, String(args[name]))
  const body: Record<string, unknown> = {}
  for (const name of tool.bodyParams) if (args[name] !== undefined) body[name] = args[name]
  const qs = query.size > 0 ? `?${query}` : ''
  const hasBody = tool.method !== 'GET'
  return new Request(`${origin}${apiPrefix}${path}${qs}`, {
    method: tool.method,
    headers: { ...headers, ...(hasBody ? { 'content-type': 'application/json' } : {}) },
    body: hasBody ? JSON.stringify(body) : undefined,
  })
}

export class ToolInputError extends Error {
  constructor(message: string, readonly param: string) {
    super(message)
  }
}

/**
 * The tool result of the REST answer as JSON text, built around the envelope's `data` bytes
 * without parsing and serializing them again (the hot path of MCP: bench/mcp.ts). The envelope
 * is always `{"ok":true,"data":...,"meta":{...}}` (api/http/envelope.ts).
 */
export async function resultJsonOf(res: Response): Promise<string> {
  const text = await res.text()
  const start = text.startsWith('{"ok":true,"data":') ? 18 : -1
  const end = text.lastIndexOf(',"meta":{')
  if (start < 0 || end < start) return JSON.stringify(parsedResult(text, res.status))
  const data = text.slice(start, end)
  const structured = data.startsWith('{') ? data : `{"items":${data}}`
  return `{"content":[{"type":"text","text":${JSON.stringify(data)}}],"structuredContent":${structured}}`
}

/** The tool result of the REST answer: `data` as structured content, or the error with isError. */
export async function resultOf(res: Response): Promise<ToolResult> {
  return JSON.parse(await resultJsonOf(res)) as ToolResult
}

function parsedResult(text: string, status: number): ToolResult {
  let envelope: { ok?: boolean; data?: unknown; error?: { code: string; message: string; param: string | null } }
  try {
    envelope = JSON.parse(text)
  } catch {
    return errorResult('INTERNAL_ERROR', `The operation answered ${status} without the envelope; retry.`, null)
  }
  if (envelope.ok) {
    const data = envelope.data
    const structured = data !== null && typeof data === 'object' && !Array.isArray(data) ? (data as Record<string, unknown>) : { items: data }
    return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: structured }
  }
  const e = envelope.error ?? { code: 'INTERNAL_ERROR', message: `The operation answered ${status}.`, param: null }
  return errorResult(e.code, e.message, e.param)
}

export function errorResult(code: string, message: string, param: string | null): ToolResult {
  return {
    content: [{ type: 'text', text: `${code}: ${message}${param ? ` (param: ${param})` : ''}` }],
    structuredContent: { error: { code, message, param } },
    isError: true,
  }
}
