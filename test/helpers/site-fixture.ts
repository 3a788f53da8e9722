import { lstatSync, readdirSync, readFileSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import type { InProcess } from './in-process'

const V1 = '/api/v1'

/** The keys a bad-input row can send (`as`). */
export type KeyName = 'owner' | 'reader' | 'writer' | 'site' | 'other'

/** A line ssh-keygen wrote (ed25519), installed on the vps site by the fixture. */
export const ED25519 = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl fixture@example.com'

/**
 * Sites and keys for the bad-input tables of the site routes, bought through the real checkout
 * (test payment pm_card_visa) on the real engine:
 * - account A (`owner`, plus `reader` with read and `writer` with read and write): `shared`
 *   (starter), `vps` (business, one SSH key and one ready snapshot), `doomed` (starter, pending
 *   deletion); `site` is a claimed key bound to `shared`;
 * - account B (`other`): `foreign` (starter, one deployment).
 * The shared site's home holds a 600 KB text file, a binary file, and two symbolic links out of
 * the home (planted from the host, as a tenant with a shell could).
 */
export interface SiteFixture {
  keys: Record<KeyName, string>
  /** Values of the rows' {placeholders}. */
  values: Record<string, string>
  homes: { shared: string; vps: string }
}

export async function siteFixture(h: InProcess): Promise<SiteFixture> {
  let ip = 0
  const from = () => ({ 'x-forwarded-for': `198.19.255.${++ip}` })
  const must = async (what: string, status: number, p: Promise<{ status: number; text: string; json: any }>) => {
    const res = await p
    if (res.status !== status) throw new Error(`fixture ${what}: ${res.status} ${res.text}`)
    return res.json.data
  }
  const buy = async (sku: string, key?: string) => {
    const slug = `bad-${Math.random().toString(36).slice(2, 8)}`
    const { id, checkout_secret: secret } = await must('checkout', 201, h.call('POST', `${V1}/acp/checkouts/`, { body: { sku }, key, headers: from() }))
    const q = `?checkout_secret=${secret}`
    await must('update', 200, h.call('POST', `${V1}/acp/checkouts/${id}/update/${q}`, { body: { requested_slug: slug, buyer_email: 'bad@example.com' } }))
    const done = await must('complete', 201, h.call('POST', `${V1}/acp/checkouts/${id}/complete/${q}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } }))
    return { slug, key: done.api_key as string }
  }

  const shared = await buy('svc_starter_monthly')
  const owner = shared.key
  const [vps, doomed, foreign] = await Promise.all([buy('svc_business_monthly', owner), buy('svc_starter_monthly', owner), buy('svc_starter_monthly')])
  await untilActive(h, [shared, vps, doomed, foreign].map((site) => site.slug))

  const newKey = async (scopes: string[]) => (await must('key', 201, h.call('POST', `${V1}/keys/create/`, { key: owner, body: { scopes } }))).api_key as string
  const [reader, writer] = await Promise.all([newKey(['read']), newKey(['read', 'write'])])
  const sitePath = (slug: string, rest: string) => `${V1}/sites/${slug}/${rest}`
  // Before the snapshot: the key agent cannot run while the snapshot freezes the site.
  const sshKey = await must('ssh key', 200, h.call('POST', sitePath(vps.slug, 'ssh/keys/'), { key: owner, body: { public_key: ED25519 } }))
  const [, , , snapshot, deployment] = await Promise.all([
    must('delete', 200, h.call('DELETE', sitePath(doomed.slug, 'delete/'), { key: owner })),
    must('write big', 200, h.call('POST', sitePath(shared.slug, 'files/write/'), { key: owner, body: { path: 'public/big.txt', content: 'x'.repeat(600 * 1024) } })),
    must('upload', 200, h.call('POST', sitePath(shared.slug, 'files/upload/'), { key: owner, body: { path: 'public/bin.dat', content_b64: Buffer.from([0, 1, 2, 255, 0]).toString('base64') } })),
    must('snapshot', 200, h.call('POST', sitePath(vps.slug, 'snapshot/'), { key: owner })),
    must('deploy', 200, h.call('POST', sitePath(foreign.slug, 'deploy/'), { key: foreign.key })),
  ])
  await h.services.jobs.drain()

  // The claim flow, as an agent inside the site would run it.
  await must('claim request', 201, h.call('POST', `${V1}/keys/claim/request/`, { body: { site_slug: shared.slug }, headers: from() }))
  const homes = { shared: await h.services.runtime.homePath(shared.slug), vps: await h.services.runtime.homePath(vps.slug) }
  const usedToken = readFileSync(join(homes.shared, '.svc/.claim_token'), 'utf8').trim()
  const site = (await must('claim', 201, h.call('POST', `${V1}/keys/claim/`, { body: { claim_token: usedToken }, headers: from() }))).api_key as string

  symlinkSync('/etc/passwd', join(homes.shared, 'public/evil'))
  symlinkSync('/tmp', join(homes.shared, 'public/evil-dir'))

  const whoami = await must('whoami', 200, h.call('GET', `${V1}/auth/whoami/`, { key: owner }))
  const foreignSub = h.services.store.sqlite.query('SELECT subscription_id AS id FROM sites WHERE slug = ?').get(foreign.slug) as { id: string }
  return {
    keys: { owner, reader, writer, site, other: foreign.key },
    values: {
      shared: shared.slug, vps: vps.slug, doomed: doomed.slug, foreign: foreign.slug,
      snapshot: snapshot.id, deployment: deployment.id, sshKey: sshKey.key_id, ownKeyId: whoami.api_key.id,
      foreignSub: foreignSub.id, usedToken,
    },
    homes,
  }
}

/** Tables a bad request must leave alone, whole (a key's last use is not a change). */
const TABLES = ['accounts', 'api_keys', 'subscriptions', 'sites', 'claim_tokens', 'deployments', 'archives', 'checkout_sessions', 'payments', 'jobs']

/**
 * Everything a bad request must not change: the rows of those tables, rate-limit hits, the shared
 * site's files (names, types, sizes, times, modes; links not followed), the vps site's
 * authorized_keys, and which containers run.
 */
export async function stateOf(h: InProcess, f: SiteFixture) {
  const db = h.services.store.sqlite
  const tables = Object.fromEntries(TABLES.map((t) => [t, (db.query(`SELECT * FROM ${t} ORDER BY rowid`).all() as Record<string, unknown>[]).map(({ last_used_at: _, ...row }) => row)]))
  const containers = (await h.services.runtime.listManaged()).map((c) => `${c.slug}:${c.running}`).sort()
  return {
    tables,
    rateLimitHits: (db.query('SELECT count(*) AS n FROM rate_limit_hits').get() as { n: number }).n,
    files: tree(f.homes.shared),
    authorizedKeys: readFileSync(join(f.homes.vps, '.ssh/authorized_keys'), 'utf8'),
    containers,
  }
}

function tree(root: string, rel = ''): string[] {
  return readdirSync(join(root, rel)).sort().flatMap((name) => {
    const path = rel ? `${rel}/${name}` : name
    const s = lstatSync(join(root, path))
    const line = `${path} ${s.mode.toString(8)} ${s.size} ${s.mtimeMs}`
    return s.isDirectory() ? [line, ...tree(root, path)] : [line]
  })
}

/**
 * Waits until the sites are active: a provisioning that failed once (a slow start on a loaded
 * machine, an SSH port another instance on the engine took) is queued again after a delay, so
 * the job runner's drain alone may return before; on the harness's manual clock, that delay
 * passes only when the clock is moved on.
 */
export async function untilActive(h: InProcess, slugs: string[], withinMs = 60_000): Promise<void> {
  const deadline = Date.now() + withinMs
  const statusOf = (slug: string) => (h.services.store.sqlite.query('SELECT status FROM sites WHERE slug = ?').get(slug) as { status: string } | null)?.status
  // What the sites' jobs say, for the message when they do not get there.
  const jobsOf = (slug: string) =>
    (h.services.store.sqlite.query('SELECT j.kind, j.status, j.attempts, j.error FROM jobs j JOIN sites s ON s.id = j.subject_id WHERE s.slug = ? ORDER BY j.rowid').all(slug) as { kind: string; status: string; attempts: number; error: string | null }[])
      .map((j) => `${j.kind} ${j.status} after ${j.attempts} attempt(s)${j.error ? `: ${j.error}` : ''}`).join('; ') || 'no job'
  for (;;) {
    await h.services.jobs.drain()
    const waiting = slugs.filter((slug) => statusOf(slug) !== 'active')
    if (waiting.length === 0) return
    if (Date.now() > deadline) throw new Error(`fixture: sites not active after ${withinMs} ms: ${waiting.map((slug) => `${slug} ${statusOf(slug)} (${jobsOf(slug)})`).join(', ')}`)
    // The harness's clock is manual: a retry queued for later is due only once the clock gets
    // there, so move it on to the first one, as time would.
    const next = (h.services.store.sqlite.query("SELECT min(run_after) AS at FROM jobs WHERE status = 'queued'").get() as { at: number | null }).at
    if (next !== null && next > h.clock.now()) {
      h.clock.set(next)
      h.services.jobs.kick()
    }
    await Bun.sleep(200)
  }
}
