/** A dotted IPv4 address, each part 0-255 without leading zeros. */
const IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/

/** True for a dotted IPv4 address literal (`10.0.0.2`). */
export function isIpv4(s: string): boolean {
  return IPV4.test(s)
}

/** True for an IPv4 or IPv6 address literal (no brackets, no zone). */
export function isIpAddress(s: string): boolean {
  if (isIpv4(s)) return true
  if (!s.includes(':') || !/^[0-9A-Fa-f:.]+$/.test(s)) return false
  try {
    new URL(`http://[${s}]/`)
    return true
  } catch {
    return false
  }
}
