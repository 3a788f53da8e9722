import { KEYS } from '../config/schema'

/**
 * The commented berth.toml that `berth install` writes: every key with its help line and
 * default, commented out except data_dir, so the file documents itself.
 */
export function renderConfigFile(overrides: Record<string, string | number | boolean | string[]> = {}): string {
  const lines = [
    '# Berth configuration. Every key can also be set by a BERTH_<SECTION>_<KEY> variable',
    '# (e.g. BERTH_SERVER_LISTEN); command-line flags win over both. Reference: docs/configuration.md.',
    '# After editing: systemctl restart berth',
  ]
  let section = ''
  for (const spec of KEYS) {
    if (spec.section !== section) {
      section = spec.section
      lines.push('', `[${section}]`)
    }
    const id = `${spec.section}.${spec.key}`
    lines.push(`# ${spec.help}`)
    if (id in overrides) lines.push(`${spec.key} = ${toml(overrides[id])}`)
    else lines.push(`# ${spec.key} = ${toml(spec.default)}`)
  }
  lines.push(
    '',
    '# The plan catalog seeded on first start (later changes: berth plans add|deprecate).',
    '# Without [[plans]] tables the embedded default catalog is used. Example:',
    '# [[plans]]',
    '# slug = "starter"',
    '# name = "Starter"',
    '# track = "single_site"          # or "agency"',
    '# hosting_type = "shared"        # "shared", "vps" or "dedicated"',
    '# price_monthly = 7              # CAD; price_annual defaults to 10x',
    '# max_sites = 1',
    '# ai_modules = ["seo"]           # chatbot, seo, translation, content',
    '# free_domain_annual = false',
    '# memory_mb = 256',
    '# cpu_cores = 1',
    '# disk_gb = 5',
    '# ai_tokens_monthly = 0          # per site per UTC month; default ai.tokens_per_site_monthly, 0 for seo alone',
    '',
  )
  return lines.join('\n')
}

const toml = (v: unknown) => JSON.stringify(v)
