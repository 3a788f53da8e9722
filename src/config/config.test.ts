import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from './config'
import { DEFAULT_PLANS } from './defaults'
import { KEYS } from './schema'

const dir = mkdtempSync(join(tmpdir(), 'berth-config-'))
const file = (name: string, text: string) => {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

describe('loadConfig', () => {
  it('runs with no file at all on the embedded defaults', () => {
    const c = loadConfig({ file: null, env: {}, cwd: '/srv' })
    expect(c.server.listen).toEqual({ hostname: '0.0.0.0', port: 8080 })
    expect(c.server.siteUrl).toBe('http://localhost:8080')
    expect(c.server.baseUrl).toBe('http://localhost:8080/api/v1')
    expect(c.server.dataDir).toBe('/srv/.berth-data')
    expect(c.brand.prefix).toBe('svc')
    expect(c.rateLimits.register).toEqual({ limit: 5, windowSeconds: 3600 })
    expect(c.plans).toEqual(DEFAULT_PLANS)
  })

  it('layers file < BERTH_* variables < flags', () => {
    const path = file('layers.toml', '[server]\nlisten = "127.0.0.1:9000"\nsite_url = "https://file.example"\ndata_dir = "/var/lib/berth"\n')
    const fromFile = loadConfig({ file: path, env: {} })
    expect(fromFile.server.listen.port).toBe(9000)
    expect(fromFile.server.dataDir).toBe('/var/lib/berth')
    const fromEnv = loadConfig({ file: path, env: { BERTH_SERVER_LISTEN: '127.0.0.1:9100', BERTH_SERVER_TRUSTED_PROXIES: '10.0.0.0/8, 192.0.2.1' } })
    expect(fromEnv.server.listen.port).toBe(9100)
    expect(fromEnv.server.siteUrl).toBe('https://file.example')
    expect(fromEnv.server.trustedProxies).toEqual(['10.0.0.0/8', '192.0.2.1'])
    const fromFlags = loadConfig({ file: path, env: { BERTH_SERVER_LISTEN: '127.0.0.1:9100' }, flags: { 'server.listen': '127.0.0.1:9200', 'server.site_url': 'https://flag.example/' } })
    expect(fromFlags.server.listen.port).toBe(9200)
    expect(fromFlags.server.siteUrl).toBe('https://flag.example')
  })

  it('finds the file through BERTH_CONFIG', () => {
    const path = file('env.toml', '[brand]\nprefix = "acme"\n')
    expect(loadConfig({ env: { BERTH_CONFIG: path } }).brand.prefix).toBe('acme')
  })

  it('reads [[plans]] from the file instead of the default catalog', () => {
    const path = file('plans.toml', '[[plans]]\nslug = "solo"\nname = "Solo"\ntrack = "single_site"\nhosting_type = "vps"\nprice_monthly = 12.5\nmax_sites = 1\nai_modules = ["seo"]\nmemory_mb = 512\ncpu_cores = 1\ndisk_gb = 10\n')
    const c = loadConfig({ file: path, env: {} })
    expect(c.plans).toHaveLength(1)
    expect(c.plans[0]).toMatchObject({ slug: 'solo', price_monthly: 12.5, hosting_type: 'vps', ai_tokens_monthly: 0 })
  })

  it("gives each plan its ai_tokens_monthly, by default ai.tokens_per_site_monthly when a module calls the model, else 0", () => {
    const plan = (slug: string, extra: string) => `[[plans]]\nslug = "${slug}"\nname = "P"\ntrack = "single_site"\nhosting_type = "shared"\nprice_monthly = 5\nmax_sites = 1\nmemory_mb = 256\ncpu_cores = 1\ndisk_gb = 5\n${extra}\n`
    const path = file('tokens.toml', [
      '[ai]\ntokens_per_site_monthly = 75000\n',
      plan('none', ''),
      plan('seo-only', 'ai_modules = ["seo"]'),
      plan('chat', 'ai_modules = ["seo", "chatbot"]'),
      plan('writer', 'ai_modules = ["content"]\nai_tokens_monthly = 300000'),
      plan('switched-off', 'ai_modules = ["translation"]\nai_tokens_monthly = 0'),
    ].join('\n'))
    const tokens = (env: Record<string, string> = {}) => Object.fromEntries(loadConfig({ file: path, env }).plans.map((p) => [p.slug, p.ai_tokens_monthly]))
    expect(tokens()).toEqual({ none: 0, 'seo-only': 0, chat: 75_000, writer: 300_000, 'switched-off': 0 })
    expect(tokens({ BERTH_AI_TOKENS_PER_SITE_MONTHLY: '1000' })).toMatchObject({ chat: 1000, writer: 300_000 })
    // The default catalog says its own figure for every plan, growing with the price.
    expect(Object.fromEntries(DEFAULT_PLANS.map((p) => [p.slug, p.ai_tokens_monthly]))).toEqual({
      starter: 0, business: 100_000, performance: 500_000, agency: 200_000, 'agency-vps': 500_000, 'legacy-basic': 0,
    })
  })

  it.each([
    ['negative', '-1'],
    ['not a whole number', '1500.5'],
    ['a string', '"lots"'],
    ['beyond a safe integer', '1e300'],
  ])('refuses a plan whose ai_tokens_monthly is %s, naming the plan and field', (_, value) => {
    const path = file('bad-tokens.toml', `[[plans]]\nslug = "xx"\nname = "X"\ntrack = "agency"\nhosting_type = "vps"\nprice_monthly = 1\nmax_sites = 1\nai_modules = ["chatbot"]\nmemory_mb = 512\ncpu_cores = 1\ndisk_gb = 1\nai_tokens_monthly = ${value}\n`)
    expect(() => loadConfig({ file: path, env: {} })).toThrowError(/plans\[0\]\.ai_tokens_monthly must be a whole number of tokens, 0 or more/)
  })

  it.each([
    ['a listen address without a port', { env: { BERTH_SERVER_LISTEN: 'localhost' } }, /server\.listen \(from BERTH_SERVER_LISTEN\) must be HOST:PORT/],
    ['a site URL with a path', { flags: { 'server.site_url': 'https://x.example/api' } }, /server\.site_url .* without a path/],
    ['a non-integer body limit', { env: { BERTH_SERVER_MAX_BODY_BYTES: 'lots' } }, /BERTH_SERVER_MAX_BODY_BYTES must be an integer/],
    ['a bad rate', { env: { BERTH_RATE_LIMITS_REGISTER: '5 per hour' } }, /rate_limits\.register .* must look like 5\/hour/],
    ['a bad trusted proxy', { env: { BERTH_SERVER_TRUSTED_PROXIES: '10.0.0.0/99' } }, /trusted_proxies: '10\.0\.0\.0\/99'/],
    ['an uppercase prefix', { env: { BERTH_BRAND_PREFIX: 'SVC' } }, /brand\.prefix .* lowercase/],
    ['an unknown processor', { env: { BERTH_PAYMENTS_PROCESSOR: 'paypal' } }, /payments\.processor .* must be 'local' or 'stripe'/],
    ['stripe without a secret key', { env: { BERTH_PAYMENTS_PROCESSOR: 'stripe', BERTH_PAYMENTS_STRIPE_WEBHOOK_SECRET: 'whsec_abc' } }, /payments\.stripe_secret_key is empty/],
    ['stripe without a webhook secret', { env: { BERTH_PAYMENTS_PROCESSOR: 'stripe', BERTH_PAYMENTS_STRIPE_SECRET_KEY: 'sk_test_abc' } }, /payments\.stripe_webhook_secret is empty/],
    ['a publishable key as the secret key', { env: { BERTH_PAYMENTS_STRIPE_SECRET_KEY: 'pk_test_abc' } }, /payments\.stripe_secret_key \(from BERTH_PAYMENTS_STRIPE_SECRET_KEY\) must be a Stripe secret key/],
    ['a webhook secret that is not one', { env: { BERTH_PAYMENTS_STRIPE_WEBHOOK_SECRET: 'abc' } }, /payments\.stripe_webhook_secret .* must be a webhook signing secret starting with 'whsec_'/],
    ['a Stripe API base with a path', { env: { BERTH_PAYMENTS_STRIPE_API_BASE: 'http://127.0.0.1:12111/v1' } }, /payments\.stripe_api_base .* without a path/],
    ['an AI base URL that is not http(s)', { env: { BERTH_AI_BASE_URL: 'ftp://ai.example/v1', BERTH_AI_MODEL: 'm' } }, /ai\.base_url \(from BERTH_AI_BASE_URL\) must be an http\(s\) URL/],
    ['an AI base URL that is no URL', { env: { BERTH_AI_BASE_URL: 'localhost:8000', BERTH_AI_MODEL: 'm' } }, /ai\.base_url \(from BERTH_AI_BASE_URL\) must be an http\(s\) URL/],
    ['an AI base URL with the key in it', { env: { BERTH_AI_BASE_URL: 'https://user:sk@ai.example/v1', BERTH_AI_MODEL: 'm' } }, /ai\.base_url .* without query, fragment or credentials/],
    ['an AI base URL without a model', { env: { BERTH_AI_BASE_URL: 'http://127.0.0.1:8000/v1' } }, /ai\.base_url is set but ai\.model is empty/],
    ['an AI key with a line break', { env: { BERTH_AI_API_KEY: 'sk-abc\nX-Evil: 1' } }, /ai\.api_key \(from BERTH_AI_API_KEY\) must be the key alone/],
    ['an AI timeout of 0', { env: { BERTH_AI_TIMEOUT_SECONDS: '0' } }, /ai\.timeout_seconds \(from BERTH_AI_TIMEOUT_SECONDS\) must be 1 to 600 seconds/],
    ['an AI timeout past 600 s', { env: { BERTH_AI_TIMEOUT_SECONDS: '601' } }, /ai\.timeout_seconds .* must be 1 to 600 seconds/],
    ['a negative token budget', { env: { BERTH_AI_TOKENS_PER_SITE_MONTHLY: '-1' } }, /ai\.tokens_per_site_monthly \(from BERTH_AI_TOKENS_PER_SITE_MONTHLY\) must be 0 or more/],
  ])('refuses %s with a message naming the key and its source', (_, opts, message) => {
    expect(() => loadConfig({ file: null, env: {}, ...opts })).toThrowError(message)
  })

  it('reads the Stripe settings, from the file and the environment', () => {
    expect(loadConfig({ file: null, env: {} }).payments).toEqual({ processor: 'local', stripe: { secretKey: '', webhookSecret: '', apiBase: null } })
    const path = file('stripe.toml', '[payments]\nprocessor = "stripe"\nstripe_webhook_secret = "whsec_file"\nstripe_api_base = "http://127.0.0.1:12111/"\n')
    const c = loadConfig({ file: path, env: { BERTH_PAYMENTS_STRIPE_SECRET_KEY: 'sk_live_fromenv' } })
    expect(c.payments).toEqual({ processor: 'stripe', stripe: { secretKey: 'sk_live_fromenv', webhookSecret: 'whsec_file', apiBase: 'http://127.0.0.1:12111' } })
  })

  it('has no AI provider by default, and reads one from the file and the environment', () => {
    expect(loadConfig({ file: null, env: {} }).ai).toEqual({ baseUrl: null, apiKey: '', model: '', embeddingModel: null, timeoutMs: 30_000, tokensPerSiteMonthly: 200_000 })
    const path = file('ai.toml', '[ai]\nbase_url = "http://127.0.0.1:8000/v1/"\nmodel = "qwen2.5-7b-instruct"\nembedding_model = "nomic-embed-text"\ntimeout_seconds = 120\ntokens_per_site_monthly = 0\n')
    const c = loadConfig({ file: path, env: { BERTH_AI_API_KEY: 'sk-fromenv' } })
    expect(c.ai).toEqual({ baseUrl: 'http://127.0.0.1:8000/v1', apiKey: 'sk-fromenv', model: 'qwen2.5-7b-instruct', embeddingModel: 'nomic-embed-text', timeoutMs: 120_000, tokensPerSiteMonthly: 0 })
  })

  it('refuses unknown keys, a wrong type in the file, invalid TOML and a missing file', () => {
    expect(() => loadConfig({ file: file('u.toml', '[server]\nlisten_on = "x"\n'), env: {} })).toThrowError(/unknown key server\.listen_on/)
    expect(() => loadConfig({ file: file('t.toml', '[server]\nmax_body_bytes = "big"\n'), env: {} })).toThrowError(/server\.max_body_bytes .* must be an integer/)
    expect(() => loadConfig({ file: file('bad.toml', '[server\n'), env: {} })).toThrowError(/not valid TOML/)
    expect(() => loadConfig({ file: join(dir, 'missing.toml'), env: {} })).toThrowError(ConfigError)
    expect(() => loadConfig({ file: file('p.toml', '[[plans]]\nslug = "xx"\nname = "X"\ntrack = "solo"\nhosting_type = "vps"\nprice_monthly = 1\nmax_sites = 1\nmemory_mb = 512\ncpu_cores = 1\ndisk_gb = 1\n'), env: {} })).toThrowError(/plans\[0\]\.track must be one of single_site, agency/)
  })

  it('every key is documented in docs/configuration.md', () => {
    const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'configuration.md'), 'utf8')
    const missing = KEYS.map((k) => `${k.section}.${k.key}`).filter((id) => !doc.includes(id))
    expect(missing).toEqual([])
    const envMissing = KEYS.map((k) => `BERTH_${k.section}_${k.key}`.toUpperCase()).filter((v) => !doc.includes(v))
    expect(envMissing).toEqual([])
  })
})
