/**
 * Requests the MCP door made of its tool calls (src/api/mcp/): the REST app handles them as any
 * other, and names next steps in its messages as tools (`list_sites`) instead of routes.
 */
export const viaMcp = new WeakSet<Request>()
