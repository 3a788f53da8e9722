/**
 * Who calls a tool: the key of the MCP HTTP request that carries the call, and that request.
 * Its own file because both the door (server.ts) and the SDK's side (sdk.ts, loaded on first use)
 * read it, and sdk.ts must not import the door that loads it.
 */
export interface Caller {
  authorization?: string
  via: Request
}
