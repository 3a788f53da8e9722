import { Type as t, type Static } from '@sinclair/typebox'
import { DateTime } from '../schema'

export const ConsoleTicket = t.Object({
  ticket: t.String({ description: 'Single use, valid 60 seconds: the WebSocket\'s upgrade spends it (loading the page does not). Bound to this site and the key that asked for it.' }),
  expires_at: DateTime('Connect before this moment; after it the ticket is refused (410).'),
  websocket_url: t.String({ description: 'ws:// or wss:// URL of the console\'s WebSocket: binary frames are terminal bytes both ways, text frames JSON control messages (docs/api.md, Console). Add ?cols=&rows= for the first size.' }),
  page_url: t.String({ description: 'A terminal page (xterm.js) on Berth\'s own origin that connects with the ticket: hand it to a person to open in a browser, on a phone too.' }),
})
export type ConsoleTicketView = Static<typeof ConsoleTicket>
