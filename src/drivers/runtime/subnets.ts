import ipaddr from 'ipaddr.js'

/** Each site network is a /28: 14 usable addresses, of which the gateway and the site use two. */
export const SITE_PREFIX = 28

/** The gateway (first host) and the site container (second host) of a site subnet. */
export function siteAddresses(subnet: string): { gateway: string; container: string } {
  const [base] = parseV4(subnet)
  return { gateway: toDotted(base + 1), container: toDotted(base + 2) }
}

/**
 * The addresses a site subnet keeps for the site's databases, highest first (.14 down to .3):
 * fixed, so a database started while the site's container is stopped never takes the site's
 * own address (.2, which the site's container asks for again at its start).
 */
export function databaseAddresses(subnet: string): string[] {
  const [base, bits] = parseV4(subnet)
  const last = base + 2 ** (32 - bits) - 2
  const out: string[] = []
  for (let a = last; a >= base + 3; a--) out.push(toDotted(a))
  return out
}

/**
 * The /28 blocks of `pool`, in address order, that overlap none of `used` (CIDR ranges of the
 * engine's existing networks; IPv6 ones are ignored) and are not in `skip`.
 *
 * @example
 * freeSiteSubnets('10.231.0.0/26', ['10.231.0.0/28'], new Set()).next().value // '10.231.0.16/28'
 */
export function* freeSiteSubnets(pool: string, used: string[], skip: ReadonlySet<string>): Generator<string> {
  const [poolBase, poolBits] = parseV4(pool)
  if (poolBits > SITE_PREFIX) throw new Error(`subnet pool ${pool} is smaller than one /${SITE_PREFIX}`)
  const taken = used.flatMap((cidr) => {
    try {
      const [base, bits] = parseV4(cidr)
      return [[base, base + 2 ** (32 - bits)] as const]
    } catch {
      return []
    }
  })
  const step = 2 ** (32 - SITE_PREFIX)
  const end = poolBase + 2 ** (32 - poolBits)
  for (let start = poolBase; start < end; start += step) {
    const cidr = `${toDotted(start)}/${SITE_PREFIX}`
    if (skip.has(cidr)) continue
    if (taken.some(([lo, hi]) => start < hi && lo < start + step)) continue
    yield cidr
  }
}

/** An IPv4 CIDR as [network address as an unsigned integer, prefix length]; throws on IPv6. */
function parseV4(cidr: string): [number, number] {
  const [addr, bits] = ipaddr.parseCIDR(cidr)
  if (addr.kind() !== 'ipv4') throw new Error(`${cidr} is not IPv4`)
  const value = (addr as ipaddr.IPv4).toByteArray().reduce((n, b) => n * 256 + b, 0)
  const size = 2 ** (32 - bits)
  return [value - (value % size), bits]
}

const toDotted = (n: number) => [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.')
