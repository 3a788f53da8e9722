/** Names: DNS records and zones, domains, and the certificates of every name served. */
import { CertificateFolder } from '../drivers/certs/files'
import type { Config } from '../config/config'
import { BerthNames } from '../domain/berth-names'
import type { Charges } from '../domain/billing'
import { DnsService, makeDnsRepository, ZoneBook } from '../domain/dns'
import { DomainEvents, DomainRegistration, DomainRenewals, DomainsService, REGISTER_DOMAIN_JOB } from '../domain/domains'
import type { SitesServiceDeps } from '../domain/sites'
import { CertificateManager, ChallengeBook, ISSUE_CERTIFICATE_JOB, makeCertificatesRepository } from '../domain/tls'
import { Preflight } from '../drivers/certs/preflight'
import { AcmeIssuer } from '../drivers/certs/acme'
import { selectRegistrar } from '../drivers/registrar/select'
import type { Registrar } from '../drivers/registrar/types'
import type { Logger } from '../lib/logger'
import type { SiteRow } from '../store/schema'
import type { CoreReads, SharedRepositories } from './core'
import { acmeDir, certificatesDir } from './installation'

export interface Names {
  /** DNS records of sites and domains. */
  dns: DnsService
  /** Berth's zones, read by the DNS server. */
  zones: ZoneBook
  domains: DomainsService
  /** Renews domains with auto-renew before they expire; run by maintenance. */
  renewals: DomainRenewals
  /** ACME challenges of open orders: HTTP-01 tokens for the edge, DNS-01 TXT for the zones. */
  challenges: ChallengeBook
  /** Certificates for every name served, obtained and renewed in jobs (issue 12). */
  certs: CertificateManager
  registrar: Registrar
  /** Berth's own names, never a tenant's: refused where a tenant names a domain or a slug. */
  berthNames: BerthNames
  /** What a site's view shows of its names: linked domains, DNS records, certificates. */
  ofSites: SitesServiceDeps['names']
  /** Domains linked to a site, Berth's own names left out: where the edge routes a domain. */
  linkedDomains(): { name: string; siteId: string }[]
}

/** Names and their jobs (a domain's registration, a certificate's order). */
export function buildNames(core: CoreReads<'config' | 'store' | 'clock' | 'log' | 'plans' | 'jobs' | 'events', 'domains' | 'accounts' | 'sites'>, payments: { charges: Charges; billing: SharedRepositories['billing'] }): Names {
  const { config, store, clock, log, plans, jobs, repos, events } = core
  const { charges, billing } = payments
  const dnsRepo = makeDnsRepository(store)
  // Berth's own names are never a tenant's (issue 23, part 6): refused where a tenant names a
  // domain or a slug, and a row from before (or a name the config has since taken) is not served.
  const berthNames = new BerthNames({ sitesDomain: config.sites.domain, siteUrl: config.server.siteUrl, nameservers: config.dns.nameservers })
  const tenantZoneSources = () => {
    const sources = dnsRepo.zoneSources()
    return { ...sources, domains: sources.domains.filter((d) => berthNames.tenantMayHold(d.name)) }
  }
  const zoneSettings = { sitesDomain: config.sites.domain, nameservers: config.dns.nameservers, publicIpv4: config.dns.publicIpv4, publicIpv6: config.dns.publicIpv6 }
  const dns = new DnsService({ store, clock, repo: dnsRepo, settings: zoneSettings, unlinkSite: (siteId, at) => repos.domains.unlinkSite(siteId, at) })
  const registrar = selectRegistrar(config, clock)
  const challenges = new ChallengeBook()
  const zones = new ZoneBook({ store, repo: { zoneSources: tenantZoneSources }, clock, settings: zoneSettings, challenges })
  const certs = new CertificateManager({
    store, clock, log, repo: makeCertificatesRepository(store), issuer: selectIssuer(config, log), challenges, jobs,
    preflight: new Preflight({ resolver: config.tls.preflightResolver, publicIpv4: config.dns.publicIpv4, nameservers: config.dns.nameservers }),
    files: new CertificateFolder(certificatesDir(config)),
    served: { sitesDomain: config.sites.domain, apiHost: apiHostOf(config), wildcard: config.tls.wildcard, sources: tenantZoneSources },
    // certificate.issued / certificate.renewal_failed go to the account of the site or domain the certificate is for.
    events: { log: events, owner: (subject) => certificateOwner(subject, repos) },
  })
  const domains = new DomainsService({
    store, clock, log, repo: repos.domains, registrar, money: { charges, billing, plans }, jobs, accounts: repos.accounts, sites: repos.sites, dns,
    terms: { nameservers: config.dns.nameservers, berthNames, pricePercent: config.registrar.pricePercent }, tls: (domainIds) => certs.forDomains(domainIds),
  })
  const domainEvents = new DomainEvents({ events, view: domains, sites: repos.sites })
  jobs.register({
    [ISSUE_CERTIFICATE_JOB]: { run: (id) => certs.issue(id), failed: async () => {}, attempts: 1 },
    [REGISTER_DOMAIN_JOB]: new DomainRegistration({ store, clock, log, repo: repos.domains, registrar, charges, billing, accounts: repos.accounts, dns, events: domainEvents }),
  })
  return {
    dns, zones, domains, challenges, certs, registrar, berthNames,
    renewals: new DomainRenewals({ repo: repos.domains, domains, accounts: repos.accounts, charges, clock, log, store, events: domainEvents }),
    ofSites: {
      linkedDomains: (ids: string[]) => repos.domains.linkedTo(ids),
      recordsOf: (rows: Pick<SiteRow, 'id' | 'slug'>[]) => dns.recordsOfSites(rows),
      tls: (siteIds: string[]) => certs.forSites(siteIds),
    },
    linkedDomains: () => repos.domains.linked().filter((d) => berthNames.tenantMayHold(d.name)),
  }
}

/** Whose a certificate is, by its subject (`site:{id}`, `domain:{id}`); null for the box's own (wildcard, api). */
function certificateOwner(subject: string, repos: Pick<SharedRepositories, 'domains' | 'sites'>): { accountId: string; siteId: string | null; siteSlug: string | null } | null {
  const [kind, id] = subject.split(':')
  if (kind === 'site' && id) {
    const site = repos.sites.find(id)
    return site ? { accountId: site.accountId, siteId: site.id, siteSlug: site.slug } : null
  }
  if (kind === 'domain' && id) {
    const domain = repos.domains.find(id)
    const site = domain?.siteId ? repos.sites.find(domain.siteId) : undefined
    return domain ? { accountId: domain.accountId, siteId: site?.id ?? null, siteSlug: site?.slug ?? null } : null
  }
  return null
}

/** The ACME issuer when a CA is configured and HTTPS listens; null otherwise (no certificates). */
function selectIssuer(config: Config, log: Logger): AcmeIssuer | null {
  const acme = config.tls.acme
  if (!acme || !config.tls.listen) return null
  return new AcmeIssuer({ ...acme, dir: acmeDir(config), log })
}

/**
 * site_url's host when it is a name (not an address or localhost): the API's certificate. It may
 * be sites_domain itself (no site is ever called that, nor any other of Berth's names); the
 * certificate manager leaves it to the wildcard's certificate when that covers it.
 */
function apiHostOf(config: Config): string | null {
  const host = new URL(config.server.siteUrl).hostname
  if (/^[\d.]+$/.test(host) || host.includes(':') || host.startsWith('[') || host === 'localhost' || host.endsWith('.localhost')) return null
  return host
}
