import { readFileSync } from 'node:fs'
import { buildApp } from '../compose/app'
import { buildBoxRestore } from '../compose/restore'
import { type ArchiveLanding, checkPublicKey, formatSpan, RestoreRefusedError, type SiteOutcome } from '../domain/offsite'
import { identitiesOf } from '../drivers/offsite/age'
import { createLogger } from '../lib/logger'
import type { Config } from '../config/config'
import { COMMON_OPTIONS, STORE_OPTIONS, UsageError, type Command, type CommandContext } from './command'
import { lockOrSay } from './admin'
import { configFrom } from './config-flags'

export const restoreCommand: Command = {
  path: ['restore'],
  summary: 'Rebuild this box from its copies off the box: the store, certificates, archives and every site.',
  usage: 'berth restore --from URL --identity FILE --signing-key KEY [--accept-unsigned] [--data-dir DIR] [--config FILE] [--at TIME] [--force] [--json]',
  description: [
    'Reads the newest manifest under URL (or the newest made at or before --at), opens it with the age',
    'identity in FILE, checks that the box signed it (--signing-key: the key berth offsite status printed',
    'on the old box) and that every id and key in it is of its exact form and its name is its own, and',
    'puts back what it names, each object checked against its SHA-256: the store',
    '(berth.db: accounts, API keys, subscriptions, sites, DNS zones and domains, migrated if this',
    'binary is newer), the certificates and ACME account (tls/), the box key of the sites\' secrets',
    '(secrets.key; a copy made before berth carried it has none: those secrets stay unreadable until',
    'set again), and every backup and snapshot (an archive that does not match is skipped and',
    'reported). Then every active site gets its network,',
    'volume, SSH port and container back on this Docker engine, its files from its newest archive',
    'before it starts, and is waited for until it answers; suspended sites are made and stopped.',
    'Ends with a table of the sites and how much time the copy misses. Then start berth serve.',
    'It holds DATA_DIR/berth.lock while it writes: it exits 1, naming the holder, while berth serve,',
    'berth migrate or another restore works on the data folder (stop berth serve first), and they',
    'are refused while it runs.',
    '',
    'URL is s3://BUCKET/PREFIX (endpoint, region and credentials from the offsite.* keys of the config',
    'or BERTH_OFFSITE_* variables) or file:///PATH. Needs the site images (berth images build) and',
    'Docker. Refuses a data folder that is not empty unless --force. A manifest that is not signed by',
    'KEY (forged, or changed), found under a name other than its own (an older one renamed), or naming',
    'an id or key of the wrong form is refused before anything is written (exit 1). Copies made before',
    'berth signed them carry no signature: refused unless --accept-unsigned. Exit 0 when every site came',
    'back, 1 when one did not (the table says which) or the copy could not be read or was refused, 2 for',
    'a usage error or a data folder that is not empty. See docs/operations.md, "Rebuilding the box from its copies".',
  ].join('\n'),
  options: {
    from: { type: 'string', value: 'URL', help: 'Where the copies are: s3://BUCKET/PREFIX or file:///PATH (what offsite.url was).' },
    identity: { type: 'string', value: 'FILE', help: "The age identity file (age-keygen's) of one of offsite.age_recipients." },
    'signing-key': { type: 'string', value: 'KEY', help: 'The public key the box signs its copies with (ed25519:..., "Signing key" of berth offsite status). Required unless --accept-unsigned.' },
    'accept-unsigned': { type: 'boolean', help: 'Also accept a copy made before berth signed its copies (no signature: anyone who could write to URL could have made it).' },
    at: { type: 'string', value: 'TIME', help: 'Restore the newest copy made at or before this ISO time (default: the newest).' },
    force: { type: 'boolean', help: 'Restore into a data folder that is not empty (replaces berth.db and tls/).' },
    ...STORE_OPTIONS,
    ...COMMON_OPTIONS,
  },
  examples: [
    'berth restore --from s3://acme-berth/box1 --identity ~/berth-offsite.key --signing-key ed25519:Wq3...',
    'berth restore --from file:///mnt/backup/berth --identity id.txt --signing-key "$(cat signing-key.txt)" --data-dir /var/lib/berth --at 2026-11-25T10:00:00Z',
  ],
  async run(ctx) {
    const from = required(ctx.values.from, 'from')
    if (!/^s3:\/\/[^/]+/.test(from) && !/^file:\/\/\/./.test(from)) throw new UsageError(`--from ${from}: give s3://BUCKET/PREFIX or file:///PATH`)
    const at = atOf(ctx.values.at as string | undefined)
    const identities = identitiesFrom(required(ctx.values.identity, 'identity'))
    const config = configFrom(ctx)
    if (from.startsWith('s3://') && (!config.offsite.accessKeyId || !config.offsite.secretAccessKey)) {
      throw new UsageError(`--from ${from}: an S3 bucket needs its credentials: set BERTH_OFFSITE_ACCESS_KEY_ID and BERTH_OFFSITE_SECRET_ACCESS_KEY (and BERTH_OFFSITE_ENDPOINT, BERTH_OFFSITE_PATH_STYLE for a service other than AWS), or the offsite.* keys of --config FILE`)
    }
    const trust = trustOf(ctx.values['signing-key'] as string | undefined, ctx.values['accept-unsigned'] === true)
    const out = ctx.out
    return restoreAlone(ctx, config, { from, at, identities, trust })
  },
}

async function restoreAlone(ctx: CommandContext, config: Config, { from, at, identities, trust }: { from: string; at: number | null; identities: ReturnType<typeof identitiesFrom>; trust: ReturnType<typeof trustOf> }): Promise<number> {
  const out = ctx.out
  const box = buildBoxRestore(config, { from, identities, trust })
  try {
    await box.checkTarget(ctx.values.force === true)
  } catch (err) {
    if (!(err instanceof RestoreRefusedError)) throw err
    out.error(err.message)
    return 2
  }
  const clock = phaseClock()
  const { key, manifest, available, signed } = await box.chooseManifest(at)
  clock.lap('manifest')
  if (!signed) out.info(`The manifest ${key} carries no signature (made before berth signed its copies): accepted because of --accept-unsigned.`)
  // Alone on the data folder from its first write to the end (taken once the copy is chosen and
  // checked: a refused copy leaves the folder unmade): berth serve, a migrate or another restore
  // is refused meanwhile, and this is refused while one of them runs.
  const lock = lockOrSay(ctx, config.server.dataDir, 'berth restore')
  if (!lock) return 1
  try {
    return await restoreLocked(ctx, config, box, { from, at, key, manifest, available, clock })
  } finally {
    lock.release()
  }
}

async function restoreLocked(
  ctx: CommandContext, config: Config, box: ReturnType<typeof buildBoxRestore>,
  { from, at, key, manifest, available, clock }: { from: string; at: number | null; key: string; manifest: Awaited<ReturnType<ReturnType<typeof buildBoxRestore>['chooseManifest']>>['manifest']; available: number; clock: ReturnType<typeof phaseClock> },
): Promise<number> {
  const out = ctx.out
  const archiveCount = manifest.sites.reduce((n, s) => n + s.archives.length, 0)
  out.info(`Restoring the copy made ${manifest.made_at} (${key}, newest of ${available} at or before ${at === null ? 'now' : new Date(at).toISOString()}) from ${from} into ${config.server.dataDir}`)
  out.info(`  ${manifest.sites.length} sites, ${archiveCount} archives, made by berth ${manifest.berth_version}, instance ${manifest.instance_id}`)
  const migrations = await box.landStore(manifest)
  clock.lap('store')
  out.info(`store: ${formatBytes(manifest.store.bytes)} compressed, checked${migrations.length ? `, migrated (${migrations.join(', ')})` : ''}`)
  const tls = await box.landTls(manifest)
  clock.lap('tls')
  out.info(tls ? 'certificates and ACME account: back in tls/' : 'certificates: none in this copy')
  const secretsKey = await box.landSecretsKey(manifest)
  clock.lap('secrets_key')
  out.info(secretsKey
    ? "secrets key: back in secrets.key (the sites' secrets open)"
    : "secrets key: none in this copy (the box never sealed a secret, or the copy was made before berth carried the key): any secret in the store stays unreadable until its site sets it again, or until the old box's secrets.key is put in the data folder")
  const archives = await box.landArchives(manifest, (a) => {
    if (!a.ok) out.info(`archive ${a.archive.storage_key}: skipped: ${a.problem}`)
  })
  clock.lap('archives')
  const good = archives.filter((a) => a.ok)
  out.info(`archives: ${good.length} of ${archives.length} back (${formatBytes(good.reduce((n, a) => n + a.archive.bytes, 0))})`)

  // The sites, on the services berth serve builds from the store now in place (no listener started).
  const app = buildApp(config, 'restore', { log: createLogger('warn', (l) => process.stderr.write(l + '\n')), firewall: null })
  const outcomes: (SiteOutcome & { ms: number })[] = []
  try {
    const sites = app.sitesReturn
    const landed = new Set(good.map((a) => a.archive.id))
    const list = sites.sites()
    for (const [i, site] of list.entries()) {
      const started = performance.now()
      const outcome = { ...(await sites.bring(site, manifest, landed)), ms: Math.round(performance.now() - started) }
      outcomes.push(outcome)
      out.info(progressLine(i + 1, list.length, outcome))
    }
    const unrestorable = sites.settleArchives(landed, manifest)
    if (unrestorable > 0) out.info(`archives listed in the store but not in this copy: ${unrestorable}, now listed as failed (they cannot be restored)`)
  } finally {
    app.close()
  }
  clock.lap('sites')
  const lostMs = box.lostMs(manifest)
  const ok = outcomes.every((o) => o.ok)
  out.result(jsonOf({ from, key, manifest, migrations, tls, secretsKey, archives, outcomes, lostMs, ok, timings: clock.laps }), () => [
    '',
    table(outcomes),
    '',
    `Anything written after ${manifest.made_at} is not in this copy: ${formatSpan(lostMs)}.`,
    ok ? 'Every site came back. Start berth serve (systemctl start berth).' : `${outcomes.filter((o) => !o.ok).length} site(s) did not come back whole (above); the others did. Start berth serve.`,
  ].join('\n'))
  return ok ? 0 : 1
}

/** Milliseconds spent in each phase, for --json (and bench/restore.ts). */
function phaseClock() {
  const laps: Record<string, number> = {}
  let last = performance.now()
  return {
    laps,
    lap(name: string) {
      const now = performance.now()
      laps[name] = Math.round(now - last)
      last = now
    },
  }
}

function required(value: unknown, name: string): string {
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`)
  return value
}

function trustOf(key: string | undefined, acceptUnsigned: boolean): { publicKey: string | null; acceptUnsigned: boolean } {
  if (key === undefined || key === '') {
    if (acceptUnsigned) return { publicKey: null, acceptUnsigned }
    throw new UsageError('--signing-key is required: give the "Signing key" that berth offsite status printed on the box that made the copies (ed25519:...). For copies made before berth signed them, pass --accept-unsigned')
  }
  try {
    return { publicKey: checkPublicKey(key), acceptUnsigned }
  } catch (err) {
    throw new UsageError(`--signing-key: ${(err as Error).message}`)
  }
}

function atOf(text: string | undefined): number | null {
  if (text === undefined) return null
  const at = Date.parse(text)
  if (!/^\d{4}-\d{2}-\d{2}/.test(text) || Number.isNaN(at)) throw new UsageError(`--at ${text}: give an ISO time such as 2026-11-25T10:00:00Z`)
  return at
}

function identitiesFrom(file: string): string[] {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new UsageError(`--identity ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`)
  }
  try {
    return identitiesOf(text)
  } catch (err) {
    throw new UsageError(`--identity ${file}: ${(err as Error).message}`)
  }
}

/** `[2/3] shop: files 1,234 (12 MB) ... serving` */
function progressLine(n: number, total: number, o: SiteOutcome): string {
  const files = o.files === null ? 'no files' : `files ${o.files.toLocaleString('en-US')} (${formatBytes(o.bytes ?? 0)})`
  return `[${n}/${total}] ${o.slug}: ${files} ... ${o.result}${o.problem ? ` (${o.problem})` : ''}`
}

function table(outcomes: SiteOutcome[]): string {
  const rows = [['SITE', 'STATUS', 'ARCHIVE USED', 'FILES', 'RESULT'], ...outcomes.map((o) => [
    o.slug,
    o.status,
    o.archive ? `${o.archive.kind} ${o.archive.created_at}` : '-',
    o.files === null ? '-' : o.files.toLocaleString('en-US'),
    o.ok ? o.result : `${o.result === 'failed' ? 'FAILED' : `${o.result}, INCOMPLETE`}: ${o.problem}`,
  ])]
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)))
  return rows.map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]!))).join('  ')).join('\n')
}

/** 1234567 -> "1.2 MB" (decimal units, as df -H). */
export function formatBytes(n: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB']
  let i = 0
  let v = n
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000
    i++
  }
  return `${i === 0 ? v : v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`
}

function jsonOf(r: { from: string; key: string; manifest: { made_at: string; berth_version: string; instance_id: string }; migrations: string[]; tls: boolean; secretsKey: boolean; archives: ArchiveLanding[]; outcomes: SiteOutcome[]; lostMs: number; ok: boolean; timings: Record<string, number> }) {
  return {
    from: r.from,
    manifest: { key: r.key, made_at: r.manifest.made_at, berth_version: r.manifest.berth_version, instance_id: r.manifest.instance_id },
    lost_seconds: Math.round(r.lostMs / 1000),
    store: { migrations: r.migrations },
    tls: r.tls,
    secrets_key: r.secretsKey,
    archives: {
      restored: r.archives.filter((a) => a.ok).length,
      skipped: r.archives.filter((a) => !a.ok).map((a) => ({ site_id: a.siteId, archive_id: a.archive.id, key: a.archive.key, problem: a.problem })),
    },
    sites: r.outcomes,
    ok: r.ok,
    timings_ms: r.timings,
  }
}
