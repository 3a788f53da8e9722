/**
 * Why Berth would not connect to a host on a site's behalf (drivers/net/outbound.ts). The API
 * answers 422 `BLOCKED_ADDRESS` (param: the field that named the host, e.g. `source.git`);
 * `reason` is the class of address, `address` the one that was refused (the host as resolved,
 * never its text).
 */
export type OutboundReason =
  | 'loopback' | 'private' | 'link_local' | 'unique_local' | 'multicast' | 'unspecified' | 'broadcast'
  | 'reserved' | 'berth' | 'not_an_address'

export class OutboundRefusedError extends Error {
  constructor(readonly host: string, readonly address: string, readonly reason: OutboundReason, message: string) {
    super(message)
  }
}

/** The host does not resolve (no address at all): the API answers 422 `VALIDATION_ERROR` (param: the field that named it). */
export class HostNotFoundError extends Error {
  constructor(readonly host: string) {
    super(`The host ${JSON.stringify(host)} does not resolve to any address; check the URL's spelling, or that its DNS records exist.`)
  }
}
