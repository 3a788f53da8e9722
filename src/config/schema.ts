import ipaddr from 'ipaddr.js'
/**
 * Every configuration key Berth reads, in one table. The table drives parsing of the TOML file, of
 * `BERTH_<SECTION>_<KEY>` variables, the default `berth.toml` written by `berth install`, and the
 * reference in docs/configuration.md (a test checks that each key is documented there).
 */
export type KeyType = 'string' | 'integer' | 'boolean' | 'string[]'

export interface KeySpec {
  section: string
  key: string
  type: KeyType
  default: string | number | boolean | string[]
  /** One sentence for the generated config file and `berth serve --help`. */
  help: string
  /** Returns an error sentence when the value is unacceptable. */
  check?: (value: never) => string | undefined
}

import type { AiModule, HostingType, Track } from '../core/enums'

export interface PlanSeed {
  slug: string
  name: string
  track: Track
  hosting_type: HostingType
  /** CAD per month; annual defaults to ten times this. */
  price_monthly: number
  price_annual?: number
  max_sites: number
  ai_modules: AiModule[]
  free_domain_annual: boolean
  memory_mb: number
  cpu_cores: number
  disk_gb: number
  /**
   * Model tokens (prompt plus answer) each site of the plan may use per UTC month; see
   * `defaultAiTokens` for the value of a seed that does not say.
   */
  ai_tokens_monthly: number
  deprecated?: boolean
}

/** The modules whose work can go through the AI provider and so spend tokens; seo never does. */
export const TOKEN_MODULES: readonly AiModule[] = ['chatbot', 'translation', 'content']

/**
 * The monthly tokens of a plan that does not give `ai_tokens_monthly`: `configured`
 * (`ai.tokens_per_site_monthly`) when one of its modules can call the model, else 0.
 */
export function defaultAiTokens(modules: readonly AiModule[], configured: number): number {
  return modules.some((m) => TOKEN_MODULES.includes(m)) ? configured : 0
}

const checkListen = (v: string) => (parseListen(v) ? undefined : `must be HOST:PORT, e.g. 0.0.0.0:8080 (got '${v}')`)
const checkUrl = (v: string) => {
  try {
    const u = new URL(v)
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return `must be an http(s) URL (got '${v}')`
    if (u.pathname !== '/' || u.search || u.hash) return `must be an origin without a path, e.g. https://hosting.example.com (got '${v}')`
    return undefined
  } catch {
    return `must be an absolute URL such as https://hosting.example.com (got '${v}')`
  }
}
const checkAiUrl = (v: string) => {
  if (v === '') return undefined
  try {
    const u = new URL(v)
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return `must be an http(s) URL such as https://api.openai.com/v1 (got '${v}')`
    if (u.search || u.hash || u.username || u.password) return `must be a plain URL without query, fragment or credentials; put the key in ai.api_key (got '${v}')`
    return undefined
  } catch {
    return `must be an http(s) URL such as https://api.openai.com/v1 or http://127.0.0.1:8080/v1, or empty for no provider (got '${v}')`
  }
}
/** `offsite.url`: empty, `s3://BUCKET[/PREFIX]` or `file:///ABSOLUTE/PATH`. */
export function checkOffsiteUrl(v: string): string | undefined {
  if (v === '') return undefined
  const s3 = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(\/[A-Za-z0-9._\/-]*)?$/.exec(v)
  if (s3) return s3[2]?.split('/').some((p) => p === '.' || p === '..') ? `the prefix may not hold . or .. (got '${v}')` : undefined
  if (/^file:\/\/\/./.test(v)) return v.includes('/../') || v.endsWith('/..') ? `must be an absolute path without .. (got '${v}')` : undefined
  return `must be s3://BUCKET/PREFIX or file:///ABSOLUTE/PATH, or empty for no off-box copies (got '${v}')`
}
/** `outbound.allow_networks`: every entry a CIDR range (an address alone is not taken: say /32 or /128). */
export function checkAllowNetworks(v: string[]): string | undefined {
  for (const entry of v) {
    let ok = false
    try {
      ok = entry.includes('/') && ipaddr.parseCIDR(entry) !== undefined
    } catch {
      ok = false
    }
    if (!ok) return `'${entry}' is not a CIDR range; give networks such as 10.20.0.0/16 or fd00:1::/64 (one address is 10.20.0.5/32)`
  }
  return undefined
}
const checkRate = (v: string) => (parseRate(v) ? undefined : `must look like 5/hour, 60/minute or 100/day (got '${v}')`)

export const KEYS: KeySpec[] = [
  { section: 'server', key: 'listen', type: 'string', default: '0.0.0.0:8080', help: 'Address and port of the single listener that serves the API, the discovery documents and the edge proxy for sites.', check: checkListen as KeySpec['check'] },
  { section: 'server', key: 'site_url', type: 'string', default: 'http://localhost:8080', help: 'Public origin agents use to reach Berth; base_url is this plus /api/v1.', check: checkUrl as KeySpec['check'] },
  { section: 'server', key: 'data_dir', type: 'string', default: './.berth-data', help: 'Folder holding the SQLite database, snapshots, backups and certificates (/var/lib/berth when installed).' },
  { section: 'server', key: 'trusted_proxies', type: 'string[]', default: [], help: 'IP addresses or CIDR ranges of reverse proxies whose X-Forwarded-For is believed; from anyone else the header is ignored.' },
  { section: 'server', key: 'max_body_bytes', type: 'integer', default: 1_048_576, help: 'Largest JSON request body accepted by API routes, in bytes; larger bodies get 413 PAYLOAD_TOO_LARGE.', check: ((v: number) => (v >= 1024 ? undefined : 'must be at least 1024')) as KeySpec['check'] },
  { section: 'server', key: 'region', type: 'string', default: 'local', help: 'Region name reported by GET /status/.' },
  { section: 'server', key: 'provider', type: 'string', default: 'berth', help: 'Provider name reported by GET /status/.' },
  { section: 'server', key: 'log_level', type: 'string', default: 'info', help: 'One of error, warn, info, debug; logs are JSON lines on standard output.', check: ((v: string) => (['error', 'warn', 'info', 'debug'].includes(v) ? undefined : 'must be error, warn, info or debug')) as KeySpec['check'] },
  { section: 'server', key: 'maintenance_seconds', type: 'integer', default: 30, help: 'How often the maintenance pass runs: automatic backups that are due, renewals and charges due, expired checkouts, old rate-limit and audit entries pruned, copies off the box kicked.', check: ((v: number) => (v >= 1 && v <= 3600 ? undefined : 'must be from 1 to 3600')) as KeySpec['check'] },
  { section: 'brand', key: 'prefix', type: 'string', default: 'svc', help: 'Short prefix of API keys (svc_...), SKUs (svc_{plan}_{period}) and the claim folder (~/.svc).', check: ((v: string) => (/^[a-z][a-z0-9]{1,11}$/.test(v) ? undefined : 'must be 2 to 12 lowercase letters or digits, starting with a letter')) as KeySpec['check'] },
  { section: 'brand', key: 'name', type: 'string', default: 'Berth', help: 'Name shown to agents and people in the discovery documents, the MCP server card and the /for-agents and /agent-native/ pages.', check: ((v: string) => (/^[^\u0000-\u001f\u007f-\u009f]{1,60}$/.test(v) ? undefined : 'must be 1 to 60 characters of plain text')) as KeySpec['check'] },
  { section: 'brand', key: 'contact_email', type: 'string', default: '', help: 'Contact address published in the plugin manifest and the pages; empty means hostmaster@{host of server.site_url}.', check: ((v: string) => (v === '' || /^[^\s@<>"]+@[^\s@<>"]+$/.test(v) ? undefined : 'must be an e-mail address (or empty for hostmaster@{site host})')) as KeySpec['check'] },
  { section: 'sites', key: 'domain', type: 'string', default: 'localhost', help: 'Sites are served at {slug}.{domain}; localhost works with no DNS set-up.' },
  { section: 'dns', key: 'listen', type: 'string', default: '0.0.0.0:5353', help: "Address and port of the authoritative DNS server (UDP and TCP); 53 in production (the systemd unit grants the capability), 'off' to run none.", check: ((v: string) => (v === 'off' || parseListen(v) ? undefined : "must be host:port (e.g. 0.0.0.0:53) or 'off'")) as KeySpec['check'] },
  { section: 'dns', key: 'nameservers', type: 'string[]', default: [], help: 'Host names of the nameservers in every zone\'s NS records and set at the registrar for new domains; default ns1.{sites.domain} and ns2.{sites.domain}, both answered with dns.public_ipv4.', check: ((v: string[]) => (v.every((n) => /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i.test(n) || /^[a-z0-9-]+\.localhost$/i.test(n)) ? undefined : 'must be host names like ns1.example.com')) as KeySpec['check'] },
  { section: 'dns', key: 'public_ipv4', type: 'string', default: '127.0.0.1', help: "The box's public IPv4 address: what site names, linked domains and in-zone nameserver names answer until a site sets its own A record.", check: ((v: string) => (ipaddr.IPv4.isValidFourPartDecimal(v) ? undefined : 'must be an IPv4 address like 203.0.113.10')) as KeySpec['check'] },
  { section: 'dns', key: 'public_ipv6', type: 'string', default: '', help: "The box's public IPv6 address for AAAA answers; empty for none.", check: ((v: string) => (v === '' || (ipaddr.IPv6.isValid(v) && v.includes(':')) ? undefined : 'must be an IPv6 address like 2001:db8::10, or empty')) as KeySpec['check'] },
  { section: 'dns', key: 'rrl_responses_per_second', type: 'integer', default: 200, help: 'Response-rate limiting of UDP answers: the answers per second each client prefix gets (as nsd\'s default); past it most are dropped and some sent truncated so real clients retry over TCP; 0 turns it off.', check: ((v: number) => (v >= 0 && v <= 100_000_000 ? undefined : 'must be 0 (off) to 100000000 answers per second')) as KeySpec['check'] },
  { section: 'dns', key: 'rrl_slip', type: 'integer', default: 2, help: 'Of the answers response-rate limiting holds back, every this-many is sent empty with the TC flag (the client retries over TCP) and the rest dropped; 1 truncates all, 0 drops all.', check: ((v: number) => (v >= 0 && v <= 100 ? undefined : 'must be 0 to 100')) as KeySpec['check'] },
  { section: 'dns', key: 'rrl_ipv4_prefix', type: 'integer', default: 24, help: 'Response-rate limiting counts IPv4 clients by this many leading bits of their address (24: one /24 is one client).', check: ((v: number) => (v >= 1 && v <= 32 ? undefined : 'must be a prefix length from 1 to 32')) as KeySpec['check'] },
  { section: 'dns', key: 'rrl_ipv6_prefix', type: 'integer', default: 56, help: 'Response-rate limiting counts IPv6 clients by this many leading bits of their address (56: one /56, a typical end site, is one client).', check: ((v: number) => (v >= 1 && v <= 128 ? undefined : 'must be a prefix length from 1 to 128')) as KeySpec['check'] },
  { section: 'tls', key: 'listen', type: 'string', default: 'off', help: "Address and port of the HTTPS listener (the API on site_url's host and every site, certificates picked by SNI); 0.0.0.0:443 in production. 'off' runs none. Certificates come only when tls.acme_directory is set too.", check: ((v: string) => (v === 'off' || parseListen(v) ? undefined : "must be host:port (e.g. 0.0.0.0:443) or 'off'")) as KeySpec['check'] },
  { section: 'tls', key: 'acme_directory', type: 'string', default: '', help: "The ACME CA's directory URL; empty (the default) gets no certificates. Start with Let's Encrypt staging, https://acme-staging-v02.api.letsencrypt.org/directory, then https://acme-v02.api.letsencrypt.org/directory.", check: ((v: string) => (v === '' || /^https?:\/\/[^\s]+$/.test(v) ? undefined : 'must be the URL of an ACME directory, or empty')) as KeySpec['check'] },
  { section: 'tls', key: 'acme_email', type: 'string', default: '', help: 'Your address for the ACME account: the CA writes there about expiring certificates and problems.' },
  { section: 'tls', key: 'acme_terms_agreed', type: 'boolean', default: false, help: "true accepts the CA's terms of service (read them first: the directory's meta.termsOfService); required with tls.acme_directory." },
  { section: 'tls', key: 'eab_kid', type: 'string', default: '', help: 'External account binding key id, for CAs that need one (ZeroSSL, Google Trust Services); empty otherwise.' },
  { section: 'tls', key: 'eab_hmac_key', type: 'string', default: '', help: 'External account binding HMAC key (base64url) that goes with tls.eab_kid; keep it out of the file with BERTH_TLS_EAB_HMAC_KEY.' },
  { section: 'tls', key: 'wildcard', type: 'boolean', default: false, help: "true gets one certificate for *.{sites.domain} by DNS-01 through Berth's own DNS (needs the delegation of sites.domain to Berth) instead of one per site by HTTP-01." },
  { section: 'tls', key: 'ca_bundle', type: 'string', default: '', help: "A PEM file of extra CA certificates to trust for the ACME directory's own HTTPS (a private or test CA such as Pebble); empty trusts the system's." },
  { section: 'tls', key: 'preflight_resolver', type: 'string', default: 'system', help: "Where the pre-flight check looks up a name before ordering its certificate (it must answer dns.public_ipv4): 'system' (this machine's resolver) or host:port of a DNS server.", check: ((v: string) => (v === 'system' || parseListen(v) ? undefined : "must be 'system' or host:port")) as KeySpec['check'] },
  { section: 'registrar', key: 'driver', type: 'string', default: 'sandbox', help: "Where domains are registered: 'sandbox' (recorded locally, nothing registered for real) or 'opensrs'.", check: ((v: string) => (['sandbox', 'opensrs'].includes(v) ? undefined : "must be 'sandbox' or 'opensrs'")) as KeySpec['check'] },
  { section: 'registrar', key: 'opensrs_url', type: 'string', default: 'https://horizon.opensrs.net:55443', help: "OpenSRS XML API endpoint: the test one by default; live is https://rr-n1-tor.opensrs.net:55443.", check: checkUrl as KeySpec['check'] },
  { section: 'registrar', key: 'opensrs_user', type: 'string', default: '', help: 'OpenSRS reseller user name (registrar.driver = opensrs).' },
  { section: 'registrar', key: 'opensrs_key', type: 'string', default: '', help: 'OpenSRS API key; keep it out of the config file with BERTH_REGISTRAR_OPENSRS_KEY.' },
  { section: 'registrar', key: 'price_percent', type: 'integer', default: 100, help: "What agents pay for a domain, as a percentage of the registrar's price (in CAD): 100 is cost price, 125 adds 25 %.", check: ((v: number) => (v >= 1 && v <= 10_000 ? undefined : 'must be a whole percentage from 1 (100 = cost price)')) as KeySpec['check'] },
  { section: 'payments', key: 'processor', type: 'string', default: 'local', help: "Payment processor driver: 'local' (the built-in test-mode processor, no money moves) or 'stripe' (needs payments.stripe_secret_key and payments.stripe_webhook_secret).", check: ((v: string) => (['local', 'stripe'].includes(v) ? undefined : "must be 'local' or 'stripe'")) as KeySpec['check'] },
  { section: 'payments', key: 'stripe_secret_key', type: 'string', default: '', help: 'Stripe secret key (sk_test_... for test mode, sk_live_... to take real money); keep it out of the file with BERTH_PAYMENTS_STRIPE_SECRET_KEY.', check: ((v: string) => (v === '' || /^(sk|rk)_(test|live)_[A-Za-z0-9_]+$/.test(v) ? undefined : 'must be a Stripe secret key: sk_test_... or sk_live_... (or a restricted rk_ key)')) as KeySpec['check'] },
  { section: 'payments', key: 'stripe_webhook_secret', type: 'string', default: '', help: 'Signing secret (whsec_...) of the Stripe webhook endpoint {site_url}/webhooks/stripe/; keep it out of the file with BERTH_PAYMENTS_STRIPE_WEBHOOK_SECRET.', check: ((v: string) => (v === '' || /^whsec_\S+$/.test(v) ? undefined : "must be a webhook signing secret starting with 'whsec_'")) as KeySpec['check'] },
  { section: 'payments', key: 'stripe_api_base', type: 'string', default: '', help: "Origin of the Stripe API; empty (the default) is Stripe's own. For tests against a stand-in only.", check: ((v: string) => (v === '' ? undefined : checkUrl(v))) as KeySpec['check'] },
  { section: 'ai', key: 'base_url', type: 'string', default: '', help: "Root of the OpenAI-compatible API the AI modules call (e.g. https://api.openai.com/v1, or http://127.0.0.1:8080/v1 for a local llama.cpp or vLLM server); empty (the default) means no provider.", check: checkAiUrl as KeySpec['check'] },
  { section: 'ai', key: 'api_key', type: 'string', default: '', help: 'Key sent as a Bearer token to ai.base_url; empty sends none (local servers). Keep it out of the file with BERTH_AI_API_KEY.', check: ((v: string) => (/^\S*$/.test(v) ? undefined : 'must be the key alone, without spaces or line breaks')) as KeySpec['check'] },
  { section: 'ai', key: 'model', type: 'string', default: '', help: 'Chat model asked for every answer (e.g. gpt-4o-mini, or the name the local server gives its model); required when ai.base_url is set.' },
  { section: 'ai', key: 'embedding_model', type: 'string', default: '', help: 'Model of embeddings (e.g. text-embedding-3-small); empty uses ai.model.' },
  { section: 'ai', key: 'timeout_seconds', type: 'integer', default: 30, help: 'How long one call to the AI provider may wait for an answer (streamed: for each next piece) before it fails; the API then answers 504.', check: ((v: number) => (v >= 1 && v <= 600 ? undefined : 'must be 1 to 600 seconds')) as KeySpec['check'] },
  { section: 'ai', key: 'tokens_per_site_monthly', type: 'integer', default: 200_000, help: 'Default monthly allowance of AI tokens (prompt plus answer) per site, for [[plans]] and berth plans add that do not give their own ai_tokens_monthly; plans without chatbot, translation or content get 0.', check: ((v: number) => (v >= 0 ? undefined : 'must be 0 or more')) as KeySpec['check'] },
  { section: 'rate_limits', key: 'register', type: 'string', default: '5/hour', help: 'POST /auth/register/ per client address.', check: checkRate as KeySpec['check'] },
  { section: 'rate_limits', key: 'checkout_create', type: 'string', default: '10/hour', help: 'POST /acp/checkouts/ per client address.', check: checkRate as KeySpec['check'] },
  { section: 'rate_limits', key: 'claim_request', type: 'string', default: '5/hour', help: 'POST /keys/claim/request/ per client address.', check: checkRate as KeySpec['check'] },
  { section: 'rate_limits', key: 'claim', type: 'string', default: '30/hour', help: 'POST /keys/claim/ per client address (tokens are 192-bit random; this only bounds abuse).', check: checkRate as KeySpec['check'] },
  { section: 'rate_limits', key: 'checkout_poll', type: 'string', default: '60/minute', help: 'GET /acp/checkouts/{id}/ per client address.', check: checkRate as KeySpec['check'] },
  { section: 'rate_limits', key: 'mcp_initialize', type: 'string', default: '30/minute', help: 'New MCP sessions (POST /mcp/ of an initialize request) per client address; past it 429 with Retry-After.', check: checkRate as KeySpec['check'] },
  { section: 'mcp', key: 'max_sessions', type: 'integer', default: 10_000, help: 'Most MCP sessions opened with a valid API key held at once (about 10 KB each); past it a new one gets 503 with Retry-After.', check: ((v: number) => (v >= 1 && v <= 1_000_000 ? undefined : 'must be 1 to 1000000')) as KeySpec['check'] },
  { section: 'mcp', key: 'max_anonymous_sessions', type: 'integer', default: 1_000, help: 'Most MCP sessions opened without a key (by agents about to register) held at once, apart from keyed ones; past it a new one gets 503 with Retry-After.', check: ((v: number) => (v >= 1 && v <= 1_000_000 ? undefined : 'must be 1 to 1000000')) as KeySpec['check'] },
  { section: 'mcp', key: 'sessions_per_key', type: 'integer', default: 100, help: "Most MCP sessions one API key holds; a new one past it closes that key's least recently used session.", check: ((v: number) => (v >= 1 && v <= 1_000_000 ? undefined : 'must be 1 to 1000000')) as KeySpec['check'] },
  { section: 'mcp', key: 'idle_seconds', type: 'integer', default: 1_800, help: 'An MCP session opened with a key and unused for this long is closed; its client initializes again.', check: ((v: number) => (v >= 10 && v <= 86_400 ? undefined : 'must be 10 to 86400 seconds')) as KeySpec['check'] },
  { section: 'mcp', key: 'anonymous_idle_seconds', type: 'integer', default: 300, help: 'An MCP session opened without a key and unused for this long is closed.', check: ((v: number) => (v >= 10 && v <= 86_400 ? undefined : 'must be 10 to 86400 seconds')) as KeySpec['check'] },
  { section: 'containers', key: 'docker_socket', type: 'string', default: '/var/run/docker.sock', help: "Unix socket of the Docker engine Berth runs sites on." },
  { section: 'containers', key: 'subnet_pool', type: 'string', default: '10.231.0.0/16', help: 'Address range carved into one /28 network per site; must not overlap networks the host already uses.', check: ((v: string) => (/^\d{1,3}(\.\d{1,3}){3}\/(1[0-9]|2[0-4])$/.test(v) ? undefined : 'must be an IPv4 CIDR range from /10 to /24, e.g. 10.231.0.0/16')) as KeySpec['check'] },
  { section: 'containers', key: 'firewall', type: 'boolean', default: true, help: "true: Berth keeps host firewall rules (iptables, chains BERTH-IN-* and BERTH-FWD-*) that stop sites from reaching the host's own addresses (Berth's API on the bridge gateway, anything else listening) and link-local addresses (the cloud metadata service, 169.254.169.254); replies, DNS, the public edge and the rest of the world pass (TCP 25 only with containers.outbound_smtp). false leaves the host's firewall alone." },
  { section: 'containers', key: 'outbound_smtp', type: 'boolean', default: false, help: "false: the site firewall (containers.firewall) refuses sites' outbound connections to TCP port 25 (SMTP between mail servers) at any address, with a TCP reset, so that one compromised site cannot put the box's address on every mail blocklist; 465 and 587 (authenticated submission to a mail provider) stay open. true lets port 25 through. The same holds on a cluster's nodes." },
  { section: 'containers', key: 'image_shared', type: 'string', default: 'berth/static:1', help: 'Image of shared-plan sites (berth images build makes berth/static:1 and berth/php:1).' },
  { section: 'containers', key: 'image_vps', type: 'string', default: 'berth/php:1', help: 'Image of vps-plan sites.' },
  { section: 'containers', key: 'image_dedicated', type: 'string', default: 'berth/php:1', help: 'Image of dedicated-plan sites.' },
  { section: 'containers', key: 'image_app', type: 'string', default: 'berth/app:1', help: 'Image of sites that deployed a source (an app: Node, Bun, Python, PHP or static with a build), on every plan; berth images build makes berth/app:1.' },
  { section: 'containers', key: 'image_postgres', type: 'string', default: 'berth/postgres:1', help: 'Image of the sites\' PostgreSQL databases (Debian 12\'s PostgreSQL 15); berth images build makes berth/postgres:1.' },
  { section: 'containers', key: 'image_mariadb', type: 'string', default: 'berth/mariadb:1', help: 'Image of the sites\' MariaDB databases (Debian 12\'s MariaDB 10.11); berth images build makes berth/mariadb:1.' },
  { section: 'containers', key: 'image_redis', type: 'string', default: 'berth/redis:1', help: 'Image of the sites\' Redis databases (Debian 12\'s Redis 7.0); berth images build makes berth/redis:1.' },
  { section: 'containers', key: 'reconcile_seconds', type: 'integer', default: 30, help: 'How often Berth makes Docker match the store (restarts missing containers, stops unknown ones).', check: ((v: number) => (v >= 1 ? undefined : 'must be at least 1')) as KeySpec['check'] },
  { section: 'containers', key: 'pids_limit', type: 'integer', default: 256, help: 'Most processes one site container may run.', check: ((v: number) => (v >= 16 ? undefined : 'must be at least 16')) as KeySpec['check'] },
  { section: 'ssh', key: 'host', type: 'string', default: '', help: "Host name agents connect to over SSH (GET /sites/{slug}/ssh/); default: server.site_url's host." },
  { section: 'ssh', key: 'listen_address', type: 'string', default: '0.0.0.0', help: 'Host address the SSH ports of vps and dedicated sites are published on.', check: ((v: string) => (/^\d{1,3}(\.\d{1,3}){3}$/.test(v) ? undefined : 'must be an IPv4 address, e.g. 0.0.0.0')) as KeySpec['check'] },
  { section: 'ssh', key: 'port_range', type: 'string', default: '2200-2999', help: 'Host ports handed out, one per vps or dedicated site, for its sshd; open them in the firewall.', check: ((v: string) => { const m = /^(\d{1,5})-(\d{1,5})$/.exec(v); return m && Number(m[1]) >= 1 && Number(m[1]) <= Number(m[2]) && Number(m[2]) <= 65535 ? undefined : 'must be FIRST-LAST, e.g. 2200-2999' }) as KeySpec['check'] },
  { section: 'archives', key: 'store', type: 'string', default: 'local', help: 'Where snapshots and backups of sites are kept; local is a folder on this machine (archives.dir).', check: ((v: string) => (['local'].includes(v) ? undefined : "must be 'local' (the only archive store built in so far)")) as KeySpec['check'] },
  { section: 'archives', key: 'dir', type: 'string', default: '', help: 'Folder of the local archive store; empty means {data_dir}/archives.' },
  { section: 'archives', key: 'snapshots_per_site', type: 'integer', default: 10, help: 'Most snapshots one site keeps; taking one more answers 409 until one is deleted.', check: ((v: number) => (v >= 1 ? undefined : 'must be at least 1')) as KeySpec['check'] },
  { section: 'archives', key: 'backups_kept', type: 'integer', default: 7, help: 'Automatic backups kept per site; older ones are deleted as new ones are made.', check: ((v: number) => (v >= 1 ? undefined : 'must be at least 1')) as KeySpec['check'] },
  { section: 'archives', key: 'deployments_kept', type: 'integer', default: 5, help: "A site's newest deployments that keep a copy of the files they put in place, for a rollback; 0 records none.", check: ((v: number) => (v >= 0 ? undefined : 'must be 0 or more')) as KeySpec['check'] },
  { section: 'archives', key: 'backup_interval_seconds', type: 'integer', default: 86_400, help: 'A site gets a new automatic backup when its newest is this old (one day by default).', check: ((v: number) => (v >= 1 ? undefined : 'must be at least 1')) as KeySpec['check'] },
  { section: 'disk', key: 'reserve_bytes', type: 'integer', default: 2_147_483_648, help: "Free bytes Berth keeps on the data folder's filesystem for its own store, archives and certificates: under this (or under disk.reserve_percent) it refuses new sites, snapshots and backups with 507 and keeps serving what exists; 0 turns this half off.", check: ((v: number) => (v >= 0 ? undefined : 'must be 0 (off) or more bytes')) as KeySpec['check'] },
  { section: 'disk', key: 'reserve_percent', type: 'integer', default: 5, help: "The same reserve as a percentage of that filesystem's size; the larger of the two holds; 0 turns this half off.", check: ((v: number) => (v >= 0 && v <= 90 ? undefined : 'must be 0 (off) to 90 percent')) as KeySpec['check'] },
  { section: 'apps', key: 'build_timeout_seconds', type: 'integer', default: 900, help: "Each install, build and release command of an app's deployment is stopped after this long (the deployment fails; the live release keeps serving).", check: ((v: number) => (v >= 30 && v <= 7200 ? undefined : 'must be from 30 to 7200')) as KeySpec['check'] },
  { section: 'apps', key: 'health_timeout_seconds', type: 'integer', default: 60, help: "How long a new release's web process has to answer its health check on $PORT before the switch is given up (the previous release keeps serving).", check: ((v: number) => (v >= 5 && v <= 600 ? undefined : 'must be from 5 to 600')) as KeySpec['check'] },
  { section: 'logs', key: 'rotate_bytes', type: 'integer', default: 10_485_760, help: "A site's log under ~/logs (any *.log file) this big or bigger is rotated: renamed NAME.1, the older ones shifted (10 MiB by default).", check: ((v: number) => (v >= 4096 ? undefined : 'must be at least 4096 bytes')) as KeySpec['check'] },
  { section: 'logs', key: 'rotate_keep', type: 'integer', default: 5, help: 'Rotated files kept per log (NAME.1 the newest); older ones are deleted. They stay in the site\'s home and count against its disk.', check: ((v: number) => (v >= 1 && v <= 100 ? undefined : 'must be from 1 to 100')) as KeySpec['check'] },
  { section: 'logs', key: 'rotate_interval_seconds', type: 'integer', default: 60, help: 'How often every site\'s logs are checked against logs.rotate_bytes; a log can outgrow it by what the site writes in that time.', check: ((v: number) => (v >= 1 ? undefined : 'must be at least 1')) as KeySpec['check'] },
  { section: 'offsite', key: 'url', type: 'string', default: '', help: 'Where encrypted copies leave the box: s3://BUCKET/PREFIX (any S3-compatible service) or file:///PATH (a mounted folder); empty keeps every copy on this box only.', check: ((v: string) => checkOffsiteUrl(v)) as KeySpec['check'] },
  { section: 'offsite', key: 'endpoint', type: 'string', default: '', help: 'The S3 endpoint URL (https://s3.eu-central-003.backblazeb2.com, http://127.0.0.1:9000); empty means AWS for offsite.region.', check: ((v: string) => (v === '' || /^https?:\/\/[^/?#]+\/?$/.test(v) ? undefined : `must be an http(s) URL without a path, e.g. https://s3.us-west-004.backblazeb2.com (got '${v}')`)) as KeySpec['check'] },
  { section: 'offsite', key: 'region', type: 'string', default: 'us-east-1', help: 'The S3 region, for the request signature.' },
  { section: 'offsite', key: 'access_key_id', type: 'string', default: '', help: 'The S3 access key id (BERTH_OFFSITE_ACCESS_KEY_ID keeps it out of the file).' },
  { section: 'offsite', key: 'secret_access_key', type: 'string', default: '', help: 'The S3 secret access key (BERTH_OFFSITE_SECRET_ACCESS_KEY keeps it out of the file).' },
  { section: 'offsite', key: 'path_style', type: 'boolean', default: false, help: 'Address the bucket as ENDPOINT/BUCKET (MinIO, Garage, most self-hosted servers) instead of BUCKET.ENDPOINT.' },
  { section: 'offsite', key: 'age_recipients', type: 'string[]', default: [], help: 'age public keys (age1...) every copy is encrypted to; keep the matching identity files off this box. Required when offsite.url is set.', check: ((v: string[]) => v.find((r) => !/^age1[0-9a-z]{20,}$/.test(r)) === undefined ? undefined : `each must be an age public key starting with age1 (made by age-keygen); got '${v.find((r) => !/^age1[0-9a-z]{20,}$/.test(r))}'`) as KeySpec['check'] },
  { section: 'offsite', key: 'store_interval_seconds', type: 'integer', default: 300, help: 'How often a consistent copy of the store (accounts, keys, sites, DNS) is sent off the box; also at shutdown.', check: ((v: number) => (v >= 10 ? undefined : 'must be at least 10')) as KeySpec['check'] },
  { section: 'metrics', key: 'token', type: 'string', default: '', help: "Bearer token Prometheus sends for GET /metrics on the API's listeners (Authorization: Bearer TOKEN); empty turns /metrics off there. Keep it out of the file with BERTH_METRICS_TOKEN.", check: ((v: string) => (v === '' || /^[\x21-\x7e]{16,256}$/.test(v) ? undefined : 'must be 16 to 256 printable characters without spaces (e.g. from openssl rand -hex 32), or empty for off')) as KeySpec['check'] },
  { section: 'metrics', key: 'listen', type: 'string', default: 'off', help: "Address and port of a separate plain-HTTP listener that serves only GET /metrics, without a token (e.g. 127.0.0.1:9464, or a private network's address); 'off' runs none.", check: ((v: string) => (v === 'off' || parseListen(v) ? undefined : "must be host:port (e.g. 127.0.0.1:9464) or 'off'")) as KeySpec['check'] },
  { section: 'cluster', key: 'enabled', type: 'boolean', default: false, help: "Run sites as Docker Swarm services across this box and the nodes joined with 'berth node join' (docs/cluster.md); this box is the Swarm manager and the control plane. Off: every site runs on this box's engine, as ever.", },
  { section: 'cluster', key: 'address', type: 'string', default: '', help: "This box's address on the nodes' private network: the Swarm's advertise address, and the only address nodes' agents accept calls and forwarded traffic from. Required with cluster.enabled.", check: ((v: string) => (v === '' || ipaddr.isValid(v) ? undefined : `must be an IP address on the private network (got '${v}')`)) as KeySpec['check'] },
  { section: 'cluster', key: 'agent_port', type: 'integer', default: 7710, help: "TCP port every node's agent listens on (mutual TLS) on the node's private address; the port after it carries the node's engine API, under the same TLS.", check: ((v: number) => (v >= 1 && v <= 65534 ? undefined : 'must be 1 to 65534')) as KeySpec['check'] },
  { section: 'cluster', key: 'join_port', type: 'integer', default: 7709, help: "TCP port of the join listener on cluster.address: HTTPS with the control plane's own certificate (data folder, cluster/join.pem), whose SHA-256 'berth nodes token' prints and 'berth node join --fingerprint' pins. It serves POST /cluster/v1/join only.", check: ((v: number) => (v >= 1 && v <= 65535 ? undefined : 'must be 1 to 65535')) as KeySpec['check'] },
  { section: 'cluster', key: 'join_token_minutes', type: 'integer', default: 60, help: "Minutes a token from 'berth nodes token' stays valid; each is spent by one join.", check: ((v: number) => (v >= 1 && v <= 10080 ? undefined : 'must be 1 to 10080 (a week)')) as KeySpec['check'] },
  { section: 'outbound', key: 'allow_networks', type: 'string[]', default: [], help: "CIDR ranges (10.20.0.0/16, fd00:1::/64) that a site's git source and the webhooks' deliveries may reach although they are loopback, private, link-local, unique-local or Berth's own addresses; empty: none. Each entry is checked.", check: ((v: string[]) => checkAllowNetworks(v)) as KeySpec['check'] },
  { section: 'dev', key: 'clock_offset_seconds', type: 'integer', default: 0, help: 'For tests only, never in production: shifts the clock Berth works by (grace periods, expiries, rate-limit windows) by this many seconds.' },
  { section: 'dev', key: 'console_ticket_seconds', type: 'integer', default: 60, help: 'For tests only: how long a console ticket stays valid (60 s otherwise), so that a test sees one expire without waiting a minute.', check: ((v: number) => (v >= 1 && v <= 60 ? undefined : 'must be 1 to 60')) as KeySpec['check'] },
  { section: 'dev', key: 'payment_delay_ms', type: 'integer', default: 0, help: 'For tests only: each charge of the built-in test processor takes this long, so a test can kill Berth in the middle of one.', check: ((v: number) => (v >= 0 && v <= 60_000 ? undefined : 'must be 0 to 60000')) as KeySpec['check'] },
]

/** Parses `HOST:PORT` (IPv6 hosts in brackets); returns undefined when malformed. */
export function parseListen(value: string): { hostname: string; port: number } | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s]+):(\d{1,5})$/.exec(value)
  if (!m) return undefined
  const port = Number(m[2])
  if (port < 0 || port > 65535) return undefined
  return { hostname: m[1].replace(/^\[|\]$/g, ''), port }
}

const UNITS: Record<string, number> = { second: 1, minute: 60, hour: 3600, day: 86400 }

/** Parses `N/unit` (second, minute, hour, day); returns undefined when malformed. */
export function parseRate(value: string): { limit: number; windowSeconds: number } | undefined {
  const m = /^(\d+)\s*\/\s*(second|minute|hour|day)$/.exec(value.trim())
  if (!m || Number(m[1]) < 1) return undefined
  return { limit: Number(m[1]), windowSeconds: UNITS[m[2]] }
}
