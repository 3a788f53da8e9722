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

/** What a tool's call does to the world, beyond reading: MCP's tool annotations. */
interface ChangeHints {
  /** It deletes, overwrites, revokes, restarts or spends money: a client should confirm it with its user. */
  destructive: boolean
  /** Calling it again with the same arguments changes nothing more (a lost answer may be retried). */
  idempotent: boolean
  /** It calls a service outside Berth (payment processor, registrar, AI provider). */
  openWorld: boolean
}

const additive = (idempotent: boolean, openWorld = false): ChangeHints => ({ destructive: false, idempotent, openWorld })
const destructive = (idempotent: boolean, openWorld = false): ChangeHints => ({ destructive: true, idempotent, openWorld })

/**
 * Every operation that changes something, reviewed one by one against what it does (a test holds
 * that none is missing; an operation left out is taken as destructive and not idempotent).
 */
export const CHANGE_HINTS: Record<string, ChangeHints> = {
  register: additive(false),
  createKey: additive(false),
  revokeKey: destructive(true),
  // The new key is shown once: a retry after a lost answer cannot get it back.
  rotateKey: destructive(false),
  createCheckout: additive(false),
  updateCheckout: additive(true),
  completeCheckout: destructive(false, true),
  cancelCheckout: destructive(true),
  createSite: additive(false),
  // Without `enabled` it flips the module; off deletes the chatbot's index and cached translations.
  toggleModule: destructive(false),
  // `overwrite: true` replaces a file; each call spends AI tokens on a new text.
  generateContent: destructive(false, true),
  requestClaim: additive(true),
  claimKey: additive(false),
  addSshKey: additive(true),
  removeSshKey: destructive(true),
  // The first call moves the site to the app image (a restart, files kept); later calls change nothing.
  enableGitPush: additive(true),
  // Issues a ticket, a new one per call; what the shell then does is the person's, not the call's.
  openConsole: additive(false),
  writeFile: destructive(true),
  uploadFile: destructive(true),
  makeDirectory: additive(true),
  deleteFile: destructive(true),
  // A command can change or delete any of the site's files; each call runs it again.
  execCommand: destructive(false),
  // Replaces or removes (null) the named variables, and restarts the app with them; the same call twice leaves the same set.
  updateSiteEnv: destructive(true),
  // Replaces the whole set ({} removes every variable).
  replaceSiteEnv: destructive(true),
  // A second call with the same name is refused (409): the URL of the first is not shown again.
  createDatabase: additive(false),
  // The server goes; the data stays for the site's grace (wave 2 restores it). Again: the same answer.
  deleteDatabase: destructive(true),
  // Only shows; audited.
  revealDatabasePassword: additive(true),
  // The old password stops working; a retry makes yet another.
  rotateDatabasePassword: destructive(false),
  createWebhookEndpoint: additive(false),
  updateWebhookEndpoint: additive(true),
  deleteWebhookEndpoint: destructive(true),
  // The new secret is shown once: a retry after a lost answer cannot get it back.
  rotateWebhookSecret: destructive(false),
  redeliverWebhook: additive(false),
  // Replaces the database's data with an archive's dump (rows written since are lost); again: the same data.
  restoreDatabase: destructive(true),
  // Restarts the site's services; each call is a new deployment.
  deploySite: destructive(false),
  // Overwrites the site's files with an earlier deployment's (files created since are removed).
  rollbackDeployment: destructive(false),
  // An upgrade charges the prorated difference to the card on file.
  scaleSite: destructive(true, true),
  deleteSite: destructive(true),
  // Cancels a scheduled deletion: the site comes back as it was; no file is touched.
  restoreSite: additive(true),
  // Sets the value sent; the same call twice leaves the same setting.
  updateSiteSettings: additive(true),
  createSnapshot: additive(false),
  deleteSnapshot: destructive(true),
  // Both replace the site's whole home with the archive's files.
  restoreSnapshot: destructive(false),
  restoreBackup: destructive(false),
  // action delete removes a record; create is idempotent (design.md, DNS details).
  changeSiteDns: destructive(true),
  addDomainDns: additive(true),
  removeDomainDns: destructive(true),
  // Charges the card on file at the registrar's price.
  registerDomain: destructive(false, true),
  // Takes the domain away from the site it pointed to.
  linkDomain: destructive(true),
  // Lock and privacy are set at the registrar.
  updateDomainSettings: additive(true, true),
  updateAccount: additive(true),
  deleteAccount: destructive(true),
}

/** Reads that ask a service outside Berth: the registrar (availability, price), the processor (a portal session). */
export const OPEN_WORLD_READS = new Set(['searchDomains', 'getBillingPortal'])

/** The annotations of an operation: reads are read-only and idempotent; changes as CHANGE_HINTS says. */
export function hintsOf(operationId: string, method: string): Pick<ToolDef['annotations'], 'readOnlyHint' | 'destructiveHint' | 'idempotentHint' | 'openWorldHint'> {
  if (method === 'get') return { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: OPEN_WORLD_READS.has(operationId) }
  const hints = CHANGE_HINTS[operationId] ?? destructive(false)
  return { readOnlyHint: false, destructiveHint: hints.destructive, idempotentHint: hints.idempotent, openWorldHint: hints.openWorld }
}

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
  const toolWords = routesAsTools(doc)
  const withDescription = (schema: Schema, name: string): Schema => {
    if (schema.description) return { ...schema, description: toolWords(schema.description) }
    return { ...schema, description: PARAM_TEXT[name] ?? `The ${name.replace(/_/g, ' ')}.` }
  }
  for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, Schema>>)) {
    for (const [method, op] of Object.entries(operations)) {
      if (!op.operationId) continue
      const properties: Record<string, Schema> = {}
      const required: string[] = []
      const pathParams: string[] = []
      const queryParams: string[] = []
      for (const p of (op.parameters ?? []) as Schema[]) {
        // A header (X-Checkout-Secret) is the REST form of what a tool takes as a query parameter.
        if (p.in === 'header') continue
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
      const name = toolName(op.operationId)
      const access = op['x-berth-access'] === 'public' ? (op['x-berth-optional-scope'] ? `no key (a key with the ${op['x-berth-optional-scope']} scope is optional)` : 'no key') : `a key with the ${op['x-berth-access']} scope`
      tools.push({
        name,
        title: op.summary ?? name,
        description: `${op.summary ?? name}. Needs ${access}. Same as ${method.toUpperCase()} ${path} of the REST API; errors come back with isError and the API's code, message and param.`,
        inputSchema: { type: 'object', properties, required, additionalProperties: false },
        annotations: { title: op.summary ?? name, ...hintsOf(op.operationId, method) },
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

/** A route as written in a description (`GET /sites/{slug}/files/?path=...`), method and path. */
const ROUTE_IN_TEXT = /\b(GET|POST|DELETE|PUT|PATCH) (\/[\w{}./-]*\/)(?:\?[^\s,;)]*)?/g
/** A path with its parameters' names left out, so `{slug}` and `{tenant_slug}` match. */
const pathShape = (path: string) => path.replace(/\{\w+\}/g, '{}')

/**
 * Renders the routes that the document's descriptions name (`From GET /plans/: ...`) as the
 * tools that stand for them (`From list_plans: ...`): docs/mcp.md promises tool names, not routes.
 */
function routesAsTools(doc: Schema): (text: string) => string {
  const byRoute = new Map<string, string>()
  for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, Schema>>)) {
    for (const [method, op] of Object.entries(operations)) if (op.operationId) byRoute.set(`${method.toUpperCase()} ${pathShape(path)}`, toolName(op.operationId))
  }
  return (text) => text.replace(ROUTE_IN_TEXT, (route, method: string, path: string) => byRoute.get(`${method} ${pathShape(path)}`) ?? route)
}

/** The REST request a tool call stands for; throws a message for the agent when an argument is unusable. */
export function requestFor(tool: ToolDef, args: Record<string, unknown>, origin: string, apiPrefix: string, headers: Record<string, string>, signal?: AbortSignal): Request {
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
    signal,
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
