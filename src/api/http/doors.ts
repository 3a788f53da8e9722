import type { OperationRef } from '../../domain/errors'

/**
 * Requests the MCP door made of its tool calls (src/api/mcp/): the REST app handles them as any
 * other, and names next steps in its messages as tools (`list_sites`) instead of routes.
 */
export const viaMcp = new WeakSet<Request>()

/**
 * How the door that carries a request names things in its messages: an operation (REST
 * `GET /sites/acme/`, MCP `get_site`) and the description of what a request accepts (REST the
 * OpenAPI document, MCP the tool's input schema).
 */
export interface DoorWords {
  operation(ref: OperationRef): string
  /** Completes "see ... for the accepted fields". */
  description: string
}

export const REST_DESCRIPTION = '/api/v1/openapi.json'
export const MCP_DESCRIPTION = "the tool's inputSchema in tools/list"

/** Where a caller finds what a request accepts, in the words of the request's door. */
export const descriptionFor = (request: Request) => (viaMcp.has(request) ? MCP_DESCRIPTION : REST_DESCRIPTION)

/**
 * An operation named inside a schema's own error text (`error: \`must be a key_id from
 * ${schemaOp('listSshKeys')}\``), rendered by validation.ts in the caller's door. The marker never
 * reaches the published document: openapi.ts strips `error` texts.
 */
export const schemaOp = (operation: string) => `{{op:${operation}}}`
const SCHEMA_OP = /\{\{op:(\w+)\}\}/g

/** A schema error text with its `schemaOp` markers named by `words`. */
export const renderSchemaOps = (text: string, words: Pick<DoorWords, 'operation'>) => text.replace(SCHEMA_OP, (_, operation: string) => words.operation({ operation, params: {} }))
