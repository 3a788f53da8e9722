import { existsSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import ipaddr from 'ipaddr.js'
import { DEFAULT_PLANS, SYSTEM_CONFIG_PATH } from './defaults'
import { ConfigError } from './errors'
import { checkPlans } from './plan-seeds'
import {
  KEYS, parseListen, parseRate,
  type KeySpec, type PlanSeed,
} from './schema'

/** The validated configuration every part of Berth receives from the composition root. */
export interface Config {
  configFile: string | null
  server: {
    listen: { hostname: string; port: number }
    siteUrl: string
    baseUrl: string
    dataDir: string
    trustedProxies: string[]
    maxBodyBytes: number
    region: string
    provider: string
    logLevel: 'error' | 'warn' | 'info' | 'debug'
    maintenanceSeconds: number
  }
  brand: { prefix: string; name: string; contactEmail: string }
  sites: { domain: string }
  /** The payment processor; `stripe` holds its keys (`apiBase` null: Stripe's own API). */
  payments: { processor: 'local' | 'stripe'; stripe: { secretKey: string; webhookSecret: string; apiBase: string | null } }
  /**
   * The AI provider of the AI modules (OpenAI-compatible API); `baseUrl` null when none is
   * configured. `embeddingModel` null: embeddings use `model`. `tokensPerSiteMonthly` is only the
   * default `ai_tokens_monthly` of plans that do not give theirs; each site's allowance is its plan's.
   */
  ai: { baseUrl: string | null; apiKey: string; model: string; embeddingModel: string | null; timeoutMs: number; tokensPerSiteMonthly: number }
  /**
   * Berth's authoritative DNS server; `listen` null when off. `rateLimit` limits UDP answers per
   * client prefix (src/dns/rate-limit.ts); `responsesPerSecond` 0 is off.
   */
  dns: {
    listen: { hostname: string; port: number } | null
    nameservers: string[]
    publicIpv4: string
    publicIpv6: string | null
    rateLimit: { responsesPerSecond: number; slip: number; ipv4Prefix: number; ipv6Prefix: number }
  }
  registrar: { driver: 'sandbox' | 'opensrs'; opensrs: { url: string; user: string; key: string }; pricePercent: number }
  /** HTTPS and certificates; `acme` null when no CA is configured (no certificates), `listen` null when off. */
  tls: {
    listen: { hostname: string; port: number } | null
    acme: { directoryUrl: string; email: string; termsAgreed: boolean; eab: { kid: string; hmacKey: string } | null; caBundle: string | null } | null
    wildcard: boolean
    preflightResolver: { hostname: string; port: number } | null
  }
  containers: {
    dockerSocket: string
    subnetPool: string
    /** Keep the host firewall rules that keep sites off the host and link-local addresses (drivers/firewall); and off TCP 25 (SMTP) unless outboundSmtp. */
    firewall: boolean; outboundSmtp: boolean
    images: Record<'shared' | 'vps' | 'dedicated', string>
    appImage: string // containers.image_app: sites that deployed a source, whatever their plan
    databaseImages: Record<'postgres' | 'mariadb' | 'redis', string> // containers.image_postgres/_mariadb/_redis: the sites' databases
    pidsLimit: number
    reconcileSeconds: number
  }
  /** SSH into vps and dedicated sites. */
  ssh: {
    /** Host name shown to agents. */
    host: string
    listenAddress: string
    portRange: { first: number; last: number }
  }
  /** Snapshots and backups of sites' files. */
  archives: {
    store: 'local'
    /** Folder of the local store, resolved (default `{data_dir}/archives`). */
    dir: string
    snapshotsPerSite: number
    backupsKept: number
    /** The newest deployments of a site that keep their files for a rollback; 0: none recorded. */
    deploymentsKept: number
    backupIntervalSeconds: number
  }
  /** The free space Berth keeps for itself on the data folder's filesystem (domain/room): the larger of the two. */
  disk: { reserveBytes: number; reservePercent: number }
  /** Rotation of sites' logs by size (domain/logs/rotation.ts; docs/configuration.md, [logs]). */
  logs: { rotateBytes: number; rotateKeep: number; rotateIntervalSeconds: number }
  apps: { buildTimeoutSeconds: number; healthTimeoutSeconds: number } // issue 39: a build's and a health check's time limits
  /** Encrypted copies off the box (docs/operations.md, "Copies off the box"); off when `url` is empty. */
  offsite: {
    /** `s3://BUCKET/PREFIX`, `file:///PATH`, or '' (off). */
    url: string
    endpoint: string
    region: string
    accessKeyId: string
    secretAccessKey: string
    pathStyle: boolean
    /** age public keys; at least one when `url` is set (checked at load). */
    ageRecipients: string[]
    storeIntervalSeconds: number
  }
  /**
   * /metrics for Prometheus (docs/operations.md, "Watching Berth with Prometheus"): `token` null
   * leaves it off on the API's listeners; `listen` null runs no separate listener.
   */
  metrics: { token: string | null; listen: { hostname: string; port: number } | null }
  /**
   * Sites across nodes on Docker Swarm (docs/cluster.md, src/cluster): off by default. `address`
   * is this box's private address; nodes' agents listen on `agentPort` (API) and `agentPort + 1`
   * (their engine), both under mutual TLS with the cluster's CA (data folder, cluster/); nodes
   * join at `joinPort` on `address`, over TLS pinned to the control plane's join certificate.
   */
  cluster: { enabled: boolean; address: string; agentPort: number; joinPort: number; joinTokenMinutes: number }
  outbound: { allowNetworks: string[] } // outbound.allow_networks (drivers/net/outbound.ts)
  rateLimits: Record<string, { limit: number; windowSeconds: number }>
  /** MCP sessions held in memory (src/api/mcp/sessions.ts). */
  mcp: { maxKeyed: number; maxAnonymous: number; perKey: number; keyedIdleMs: number; anonymousIdleMs: number }
  plans: PlanSeed[]
  /** For tests only: `clockOffsetSeconds` shifts the system clock of src/compose/core.ts (0 = real time). */
  dev: { clockOffsetSeconds: number; paymentDelayMs: number; consoleTicketSeconds: number }
}

/** A config problem the hoster must fix; the CLI prints `message` and exits with status 2. */
export { ConfigError }
export { checkPlans }
export { PLAN_SLUG } from './plan-seeds'

/** Values given on the command line, keyed `section.key`; they win over everything else. */
export type FlagValues = Partial<Record<string, string>>

export interface LoadOptions {
  /**
   * Path from `--config`; else `BERTH_CONFIG`; else /etc/berth/berth.toml when it exists.
   * `null` means no file at all, whatever exists on the machine (tests).
   */
  file?: string | null
  env?: Record<string, string | undefined>
  flags?: FlagValues
  /** Resolves a relative data_dir; defaults to the working directory. */
  cwd?: string
}

type Raw = Record<string, Record<string, unknown>>

/**
 * Loads the configuration: embedded defaults, then the TOML file, then `BERTH_<SECTION>_<KEY>`
 * variables, then flags. Throws ConfigError naming the offending key and its source.
 */
export function loadConfig(options: LoadOptions = {}): Config {
  const env = options.env ?? {}
  const file = options.file === null ? undefined : options.file ?? env.BERTH_CONFIG ?? (existsSync(SYSTEM_CONFIG_PATH) ? SYSTEM_CONFIG_PATH : undefined)
  const fromFile = file ? readToml(file) : {}
  const values = new Map<string, unknown>()
  for (const spec of KEYS) {
    const id = `${spec.section}.${spec.key}`
    let value: unknown = spec.default
    let source = 'default'
    const inFile = fromFile[spec.section]?.[spec.key]
    if (inFile !== undefined) [value, source] = [inFile, `${file}`]
    const envName = `BERTH_${spec.section}_${spec.key}`.toUpperCase()
    if (env[envName] !== undefined) [value, source] = [fromString(spec, env[envName] as string, envName), envName]
    const flag = options.flags?.[id]
    if (flag !== undefined) [value, source] = [fromString(spec, flag, `--${spec.key.replace(/_/g, '-')}`), 'command line']
    values.set(id, checkValue(spec, value, `${id} (from ${source})`))
  }
  checkUnknownKeys(fromFile, file)
  return build(values, file ?? null, fromFile, options.cwd ?? process.cwd())
}

/**
 * The `BERTH_*` variables of `env` that name no key (nor BERTH_CONFIG): `loadConfig` passes over
 * them, so a misspelt one changes nothing, silently. `berth doctor` names them.
 */
export function unknownVariables(env: Record<string, string | undefined>): string[] {
  const known = new Set(['BERTH_CONFIG', ...KEYS.map((k) => `BERTH_${k.section}_${k.key}`.toUpperCase())])
  return Object.keys(env).filter((name) => name.startsWith('BERTH_') && !known.has(name)).sort()
}

function readToml(file: string): Raw {
  if (!existsSync(file)) throw new ConfigError(`Config file ${file} does not exist; create it or drop --config/BERTH_CONFIG.`)
  try {
    return Bun.TOML.parse(readFileSync(file, 'utf8')) as Raw
  } catch (err) {
    throw new ConfigError(`Config file ${file} is not valid TOML: ${(err as Error).message}`)
  }
}

function fromString(spec: KeySpec, text: string, source: string): unknown {
  switch (spec.type) {
    case 'string': return text
    case 'string[]': return text.split(',').map((s) => s.trim()).filter(Boolean)
    case 'integer': {
      if (!/^-?\d+$/.test(text.trim())) throw new ConfigError(`${source} must be an integer (got '${text}')`)
      return Number(text)
    }
    case 'boolean': {
      if (!/^(true|false|1|0)$/i.test(text)) throw new ConfigError(`${source} must be true or false (got '${text}')`)
      return /^(true|1)$/i.test(text)
    }
  }
}

function checkValue(spec: KeySpec, value: unknown, where: string): unknown {
  const ok =
    (spec.type === 'string' && typeof value === 'string') ||
    (spec.type === 'integer' && Number.isInteger(value)) ||
    (spec.type === 'boolean' && typeof value === 'boolean') ||
    (spec.type === 'string[]' && Array.isArray(value) && value.every((v) => typeof v === 'string'))
  if (!ok) throw new ConfigError(`${where} must be ${describeType(spec.type)}`)
  const problem = spec.check?.(value as never)
  if (problem) throw new ConfigError(`${where} ${problem}`)
  return value
}

const describeType = (t: KeySpec['type']) =>
  ({ string: 'a string', integer: 'an integer', boolean: 'true or false', 'string[]': 'a list of strings' })[t]

function checkUnknownKeys(raw: Raw, file: string | undefined) {
  for (const [section, body] of Object.entries(raw)) {
    if (section === 'plans') continue
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new ConfigError(`${file}: '${section}' must be a [section]; see docs/configuration.md`)
    }
    for (const key of Object.keys(body)) {
      if (!KEYS.some((k) => k.section === section && k.key === key)) {
        throw new ConfigError(`${file}: unknown key ${section}.${key}; see docs/configuration.md for the keys Berth reads`)
      }
    }
  }
}

function build(values: Map<string, unknown>, file: string | null, raw: Raw, cwd: string): Config {
  const get = <T>(id: string) => values.get(id) as T
  const siteUrl = get<string>('server.site_url').replace(/\/+$/, '')
  const trusted = get<string[]>('server.trusted_proxies')
  for (const entry of trusted) {
    const ok = entry.includes('/') ? safe(() => ipaddr.parseCIDR(entry)) : ipaddr.isValid(entry)
    if (!ok) throw new ConfigError(`server.trusted_proxies: '${entry}' is not an IP address or CIDR range`)
  }
  if (get<string>('offsite.url') && get<string[]>('offsite.age_recipients').length === 0) {
    throw new ConfigError('offsite.url is set but offsite.age_recipients is empty: every copy leaves the box encrypted; run age-keygen on another machine and put its public key (age1...) here')
  }
  if (get<string>('offsite.url').startsWith('s3://') && (!get<string>('offsite.access_key_id') || !get<string>('offsite.secret_access_key'))) {
    throw new ConfigError('offsite.url is an s3:// bucket but offsite.access_key_id or offsite.secret_access_key is empty: give the credentials of a key that may read, write, list and delete under the prefix')
  }
  if (get<boolean>('cluster.enabled') && !get<string>('cluster.address')) {
    throw new ConfigError("cluster.enabled is true but cluster.address is empty: give this box's address on the nodes' private network (e.g. 10.0.0.1); see docs/cluster.md")
  }
  if (get<string>('tls.acme_directory') && !get<boolean>('tls.acme_terms_agreed')) {
    throw new ConfigError("tls.acme_directory is set but tls.acme_terms_agreed is false: read the CA's terms of service and set tls.acme_terms_agreed = true")
  }
  if (get<string>('tls.acme_directory') && !get<string>('tls.acme_email')) {
    throw new ConfigError('tls.acme_directory is set but tls.acme_email is empty: give the address the CA writes to about expiring certificates')
  }
  if (Boolean(get<string>('tls.eab_kid')) !== Boolean(get<string>('tls.eab_hmac_key'))) {
    throw new ConfigError('tls.eab_kid and tls.eab_hmac_key go together: set both (from your CA\'s account page) or neither')
  }
  const caBundleFile = get<string>('tls.ca_bundle')
  if (caBundleFile && !existsSync(caBundleFile)) throw new ConfigError(`tls.ca_bundle names ${caBundleFile}, which does not exist`)
  if (get<string>('registrar.driver') === 'opensrs' && (!get<string>('registrar.opensrs_user') || !get<string>('registrar.opensrs_key'))) {
    throw new ConfigError('registrar.driver is opensrs but registrar.opensrs_user or registrar.opensrs_key is empty: set both (the key with BERTH_REGISTRAR_OPENSRS_KEY)')
  }
  if (get<string>('payments.processor') === 'stripe') {
    if (!get<string>('payments.stripe_secret_key')) throw new ConfigError("payments.processor is stripe but payments.stripe_secret_key is empty: set it to the secret key from the Stripe Dashboard (Developers > API keys), with BERTH_PAYMENTS_STRIPE_SECRET_KEY rather than in the file")
    if (!get<string>('payments.stripe_webhook_secret')) throw new ConfigError("payments.processor is stripe but payments.stripe_webhook_secret is empty: add the webhook endpoint {site_url}/webhooks/stripe/ in the Stripe Dashboard and set its signing secret (whsec_...); see docs/payments.md")
  }
  if (get<string>('ai.base_url') && !get<string>('ai.model')) {
    throw new ConfigError('ai.base_url is set but ai.model is empty: set ai.model to the name of the chat model the provider serves (its GET {base_url}/models lists them)')
  }
  const rateLimits: Config['rateLimits'] = {}
  for (const spec of KEYS.filter((k) => k.section === 'rate_limits')) {
    rateLimits[spec.key] = parseRate(get<string>(`rate_limits.${spec.key}`))!
  }
  return {
    configFile: file,
    server: {
      listen: parseListen(get<string>('server.listen'))!,
      siteUrl,
      baseUrl: `${siteUrl}/api/v1`,
      dataDir: resolve(cwd, get<string>('server.data_dir')),
      trustedProxies: trusted,
      maxBodyBytes: get<number>('server.max_body_bytes'),
      region: get<string>('server.region'),
      provider: get<string>('server.provider'),
      logLevel: get<Config['server']['logLevel']>('server.log_level'),
      maintenanceSeconds: get<number>('server.maintenance_seconds'),
    },
    brand: { prefix: get<string>('brand.prefix'), name: get<string>('brand.name'), contactEmail: get<string>('brand.contact_email') },
    sites: { domain: get<string>('sites.domain').toLowerCase() },
    payments: {
      processor: get<'local' | 'stripe'>('payments.processor'),
      stripe: {
        secretKey: get<string>('payments.stripe_secret_key'),
        webhookSecret: get<string>('payments.stripe_webhook_secret'),
        apiBase: get<string>('payments.stripe_api_base').replace(/\/+$/, '') || null,
      },
    },
    ai: {
      baseUrl: get<string>('ai.base_url').replace(/\/+$/, '') || null,
      apiKey: get<string>('ai.api_key'),
      model: get<string>('ai.model'),
      embeddingModel: get<string>('ai.embedding_model') || null,
      timeoutMs: get<number>('ai.timeout_seconds') * 1000,
      tokensPerSiteMonthly: get<number>('ai.tokens_per_site_monthly'),
    },
    dns: {
      listen: get<string>('dns.listen') === 'off' ? null : parseListen(get<string>('dns.listen'))!,
      nameservers: nameserversOf(get<string[]>('dns.nameservers'), get<string>('sites.domain').toLowerCase()),
      publicIpv4: get<string>('dns.public_ipv4'),
      publicIpv6: get<string>('dns.public_ipv6') || null,
      rateLimit: {
        responsesPerSecond: get<number>('dns.rrl_responses_per_second'),
        slip: get<number>('dns.rrl_slip'),
        ipv4Prefix: get<number>('dns.rrl_ipv4_prefix'),
        ipv6Prefix: get<number>('dns.rrl_ipv6_prefix'),
      },
    },
    tls: {
      listen: get<string>('tls.listen') === 'off' ? null : parseListen(get<string>('tls.listen'))!,
      acme: get<string>('tls.acme_directory')
        ? {
            directoryUrl: get<string>('tls.acme_directory'),
            email: get<string>('tls.acme_email'),
            termsAgreed: get<boolean>('tls.acme_terms_agreed'),
            eab: get<string>('tls.eab_kid') ? { kid: get<string>('tls.eab_kid'), hmacKey: get<string>('tls.eab_hmac_key') } : null,
            caBundle: caBundleFile ? readFileSync(caBundleFile, 'utf8') : null,
          }
        : null,
      wildcard: get<boolean>('tls.wildcard'),
      preflightResolver: get<string>('tls.preflight_resolver') === 'system' ? null : parseListen(get<string>('tls.preflight_resolver'))!,
    },
    registrar: {
      driver: get<'sandbox' | 'opensrs'>('registrar.driver'),
      opensrs: { url: get<string>('registrar.opensrs_url'), user: get<string>('registrar.opensrs_user'), key: get<string>('registrar.opensrs_key') },
      pricePercent: get<number>('registrar.price_percent'),
    },
    containers: {
      dockerSocket: get<string>('containers.docker_socket'),
      subnetPool: get<string>('containers.subnet_pool'),
      firewall: get<boolean>('containers.firewall'), outboundSmtp: get<boolean>('containers.outbound_smtp'),
      images: {
        shared: get<string>('containers.image_shared'),
        vps: get<string>('containers.image_vps'),
        dedicated: get<string>('containers.image_dedicated'),
      },
      appImage: get<string>('containers.image_app'),
      databaseImages: { postgres: get<string>('containers.image_postgres'), mariadb: get<string>('containers.image_mariadb'), redis: get<string>('containers.image_redis') },
      pidsLimit: get<number>('containers.pids_limit'),
      reconcileSeconds: get<number>('containers.reconcile_seconds'),
    },
    ssh: {
      host: get<string>('ssh.host') || new URL(siteUrl).hostname,
      listenAddress: get<string>('ssh.listen_address'),
      portRange: (([first, last]) => ({ first: first!, last: last! }))(get<string>('ssh.port_range').split('-').map(Number)),
    },
    archives: {
      store: get<'local'>('archives.store'),
      dir: resolve(cwd, get<string>('archives.dir') || join(get<string>('server.data_dir'), 'archives')),
      snapshotsPerSite: get<number>('archives.snapshots_per_site'),
      backupsKept: get<number>('archives.backups_kept'),
      deploymentsKept: get<number>('archives.deployments_kept'),
      backupIntervalSeconds: get<number>('archives.backup_interval_seconds'),
    },
    disk: { reserveBytes: get<number>('disk.reserve_bytes'), reservePercent: get<number>('disk.reserve_percent') },
    apps: { buildTimeoutSeconds: get<number>('apps.build_timeout_seconds'), healthTimeoutSeconds: get<number>('apps.health_timeout_seconds') },
    logs: { rotateBytes: get<number>('logs.rotate_bytes'), rotateKeep: get<number>('logs.rotate_keep'), rotateIntervalSeconds: get<number>('logs.rotate_interval_seconds') },
    offsite: {
      url: get<string>('offsite.url'), endpoint: get<string>('offsite.endpoint'), region: get<string>('offsite.region'),
      accessKeyId: get<string>('offsite.access_key_id'), secretAccessKey: get<string>('offsite.secret_access_key'), pathStyle: get<boolean>('offsite.path_style'),
      ageRecipients: get<string[]>('offsite.age_recipients'), storeIntervalSeconds: get<number>('offsite.store_interval_seconds'),
    },
    cluster: {
      enabled: get<boolean>('cluster.enabled'), address: get<string>('cluster.address'), agentPort: get<number>('cluster.agent_port'),
      joinPort: get<number>('cluster.join_port'), joinTokenMinutes: get<number>('cluster.join_token_minutes'),
    },
    outbound: { allowNetworks: get<string[]>('outbound.allow_networks') },
    metrics: { token: get<string>('metrics.token') || null, listen: get<string>('metrics.listen') === 'off' ? null : parseListen(get<string>('metrics.listen'))! },
    rateLimits,
    mcp: {
      maxKeyed: get<number>('mcp.max_sessions'),
      maxAnonymous: get<number>('mcp.max_anonymous_sessions'),
      perKey: get<number>('mcp.sessions_per_key'),
      keyedIdleMs: get<number>('mcp.idle_seconds') * 1000,
      anonymousIdleMs: get<number>('mcp.anonymous_idle_seconds') * 1000,
    },
    plans: raw.plans === undefined ? DEFAULT_PLANS : checkPlans(raw.plans, file, get<number>('ai.tokens_per_site_monthly')),
    dev: { clockOffsetSeconds: get<number>('dev.clock_offset_seconds'), paymentDelayMs: get<number>('dev.payment_delay_ms'), consoleTicketSeconds: get<number>('dev.console_ticket_seconds') },
  }
}

/** The configured nameservers, lower-case; by default two names under the sites domain. */
function nameserversOf(configured: string[], sitesDomain: string): string[] {
  const names = configured.map((n) => n.toLowerCase().replace(/\.$/, ''))
  return names.length > 0 ? names : [`ns1.${sitesDomain}`, `ns2.${sitesDomain}`]
}

const safe = (fn: () => unknown) => {
  try { fn(); return true } catch { return false }
}
