/**
 * The address a connection came from, as the agent compares it with the control address: an
 * IPv4 address mapped into IPv6 (`::ffff:10.0.0.1`, what a dual-stack listener reports) is the
 * IPv4 address.
 */
export function plainAddress(address: string | undefined | null): string {
  if (!address) return ''
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address
}

/** True when a connection from `remote` is the control plane's. */
export function fromControl(remote: string | undefined | null, controlAddress: string): boolean {
  return plainAddress(remote) === plainAddress(controlAddress)
}
