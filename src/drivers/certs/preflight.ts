import { Resolver } from 'node:dns/promises'

/**
 * The pre-flight check before an order (design.md, Certificates): a name gets a certificate only
 * when its DNS points at this box, checked the way the CA will see it rather than learnt from the
 * CA's refusal (which counts against its rate limits). Answers null when ready, else the reason.
 */
export class Preflight {
  private resolver = new Resolver({ timeout: 3000, tries: 2 })

  constructor(private o: { resolver: { hostname: string; port: number } | null; publicIpv4: string; nameservers: string[] }) {
    if (o.resolver) this.resolver.setServers([`${o.resolver.hostname}:${o.resolver.port}`])
  }

  /** HTTP-01: the name must answer the box's address. */
  async pointsHere(name: string): Promise<string | null> {
    let addresses: string[]
    try {
      addresses = await this.resolver.resolve4(name)
    } catch (err) {
      return `${name} does not resolve (${(err as { code?: string }).code ?? (err as Error).message}); point its A record at ${this.o.publicIpv4}`
    }
    if (addresses.includes(this.o.publicIpv4)) return null
    return `${name} answers ${addresses.join(', ')}, not this server's ${this.o.publicIpv4}; point its A record here (or delete yours to get the default)`
  }

  /** DNS-01: the zone must be delegated to Berth's nameservers, or Berth's TXT answer is not the one the CA sees. */
  async delegatedHere(zone: string): Promise<string | null> {
    let ns: string[]
    try {
      ns = (await this.resolver.resolveNs(zone)).map((n) => n.toLowerCase())
    } catch (err) {
      return `${zone} has no NS records (${(err as { code?: string }).code ?? (err as Error).message}); delegate it to ${this.o.nameservers.join(' and ')}`
    }
    if (ns.some((n) => this.o.nameservers.includes(n))) return null
    return `${zone} is delegated to ${ns.join(', ')}, not to ${this.o.nameservers.join(' and ')}; the wildcard needs Berth to answer its DNS`
  }
}
