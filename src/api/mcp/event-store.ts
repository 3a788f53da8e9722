import type { EventStore } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'

/** Events kept per session for clients that reconnect with Last-Event-ID. */
const KEPT = 200

/**
 * One session's SSE events, so a client whose stream broke can reconnect with `Last-Event-ID`
 * and get what it missed (MCP resumability). In memory and bounded: a session is short-lived and
 * ends with Berth, and a client that lost more than the last 200 events starts over.
 */
export class SessionEventStore implements EventStore {
  private events: { id: string; streamId: string; message: JSONRPCMessage }[] = []
  private seq = 0

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = `${streamId}.${++this.seq}`
    this.events.push({ id, streamId, message })
    if (this.events.length > KEPT) this.events.splice(0, this.events.length - KEPT)
    return id
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.events.find((e) => e.id === eventId)?.streamId
  }

  async replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    const at = this.events.findIndex((e) => e.id === lastEventId)
    if (at < 0) return ''
    const streamId = this.events[at]!.streamId
    for (const e of this.events.slice(at + 1)) {
      // Priming events carry no message; they only mark a place to resume from.
      if (e.streamId === streamId && Object.keys(e.message).length > 0) await send(e.id, e.message)
    }
    return streamId
  }
}
