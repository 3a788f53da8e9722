import { spawnSync } from 'bun'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { COMMANDS } from '../src/cli'
import { BINARY, startBerth } from './helpers/binary'

const run = (args: string[], env: Record<string, string> = {}) => {
  const p = spawnSync([BINARY, ...args], { stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH ?? '', ...env } })
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() }
}

describe('berth command line', () => {
  it('lists every command in --help', () => {
    const res = run(['--help'])
    expect(res.code).toBe(0)
    for (const c of COMMANDS) expect(res.out).toContain(c.path.join(' '))
  })

  it.each(COMMANDS.map((c) => [c.path.join(' '), c] as const))('%s --help shows usage and every option', (_, cmd) => {
    const res = run([...cmd.path, '--help'])
    expect(res.code).toBe(0)
    expect(res.out).toContain(`Usage: ${cmd.usage}`)
    for (const option of Object.keys(cmd.options)) expect(res.out).toContain(`--${option}`)
  })

  it('answers unknown commands and options with status 2 and a pointer to help', () => {
    expect(run(['deploy-everything']).code).toBe(2)
    const bad = run(['plans', 'list', '--colour'])
    expect(bad.code).toBe(2)
    expect(bad.err).toContain("Unknown option '--colour'")
    expect(run(['plans']).err).toContain('needs a subcommand')
  })

  it('berth restore refuses what it cannot use with status 2, saying what to give, before touching anything', () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-cli-restore-'))
    const identity = join(dir, 'id.txt')
    writeFileSync(identity, '# created: 2026-11-25\nAGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ\n')
    const data = join(dir, 'data')
    const cases: [string[], RegExp][] = [
      [['--identity', identity], /--from is required/],
      [['--from', 'http://bucket/x', '--identity', identity], /give s3:\/\/BUCKET\/PREFIX or file:\/\/\/PATH/],
      [['--from', 's3://bucket/box1', '--identity', identity], /an S3 bucket needs its credentials: set BERTH_OFFSITE_ACCESS_KEY_ID and BERTH_OFFSITE_SECRET_ACCESS_KEY/],
      [['--from', `file://${dir}`, '--identity', join(dir, 'missing.txt')], /--identity .*missing\.txt: cannot read it/],
      [['--from', `file://${dir}`, '--identity', identity, '--at', 'yesterday'], /--at yesterday: give an ISO time/],
      [['--from', `file://${dir}`, '--identity', identity], /--signing-key is required: give the "Signing key" that berth offsite status printed .* pass --accept-unsigned/],
      [['--from', `file://${dir}`, '--identity', identity, '--signing-key', 'ssh-ed25519 AAAA'], /--signing-key: "ssh-ed25519 AAAA" is not a signing key: give the line berth offsite status printed/],
    ]
    for (const [args, message] of cases) {
      const res = run(['restore', '--data-dir', data, ...args])
      expect(res.code, res.err).toBe(2)
      expect(res.err).toMatch(message)
    }
    expect(spawnSync(['ls', data]).exitCode).not.toBe(0)
  })

  it.each([['images', '--help'], ['help', 'images'], ['plans', '-h'], ['sites', '--help']])('%s %s lists the group\'s subcommands', (...args) => {
    const res = run(args)
    expect(res.code).toBe(0)
    expect(res.err).toBe('')
    const group = args.find((a) => a !== 'help' && !a.startsWith('-'))!
    expect(res.out).toContain(`Usage: berth ${group} <subcommand>`)
    for (const c of COMMANDS.filter((c) => c.path[0] === group)) expect(res.out).toMatch(new RegExp(`^  ${c.path.join(' ')} +${c.summary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'))
  })

  it('images build keeps up-to-date images on a host without busybox-static, and says why a rebuild cannot run', () => {
    // The host's /bin/busybox hidden behind an empty file, in a mount namespace of this command only.
    const empty = join(mkdtempSync(join(tmpdir(), 'berth-cli-')), 'busybox')
    writeFileSync(empty, '')
    const hidden = (...args: string[]) => {
      const p = spawnSync(['unshare', '--mount', '--propagation', 'private', 'sh', '-c', `mount --bind ${empty} /bin/busybox && exec "$@"`, 'sh', BINARY, 'images', 'build', '--only', 'static', ...args], { stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH ?? '' } })
      return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() }
    }
    const kept = hidden('--json', '--data-dir', dirname(empty))
    expect(kept.code, kept.err).toBe(0)
    expect(JSON.parse(kept.out)).toMatchObject([{ image: 'berth/static:1', status: 'up-to-date' }])
    const rebuild = hidden('--rebuild', '--data-dir', dirname(empty))
    expect(rebuild.code).toBe(1)
    expect(rebuild.err).toContain('busybox-static')
  })

  it('prints --json on every admin command', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'berth-cli-'))
    const store = ['--data-dir', dataDir]
    const version = JSON.parse(run(['version', '--json']).out)
    expect(version).toMatchObject({ api_version: 'v1', bun: '1.4.5' })
    expect(JSON.parse(run(['migrate', '--json', ...store]).out).migrations.length).toBeGreaterThan(0)
    // The plans commands are clients of berth serve's admin socket (issue 37).
    const berth = await startBerth({ dataDir })
    try {
    const list = JSON.parse(run(['plans', 'list', '--json', ...store]).out)
    expect(list.map((p: { slug: string }) => p.slug)).toContain('legacy-basic')
    const added = run(['plans', 'add', '--json', ...store, '--slug', 'growth', '--name', 'Growth', '--track', 'single_site', '--hosting-type', 'vps', '--monthly', '19.5', '--ai-modules', 'seo,chatbot', '--ai-tokens', '150000'])
    expect(added.code).toBe(0)
    expect(JSON.parse(added.out)).toMatchObject({ slug: 'growth', price: { monthly: 19.5, annual: 195 }, features: { ai_modules: ['seo', 'chatbot'], ai_tokens_monthly: 150_000, ssh: true } })
    const dep = JSON.parse(run(['plans', 'deprecate', 'growth', '--json', ...store]).out)
    expect(dep.deprecated).toBe(true)
    const onSale = JSON.parse(run(['plans', 'list', '--on-sale', '--json', ...store]).out)
    expect(onSale.map((p: { slug: string }) => p.slug)).not.toContain('growth')
    } finally {
      await berth.stop()
    }
  })

  it('stores and shows each plan\'s --ai-tokens, by default ai.tokens_per_site_monthly when a module calls the model', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'berth-cli-'))
    const berth = await startBerth({ dataDir })
    try {
    const add = (slug: string, extra: string[], env: Record<string, string> = {}) =>
      run(['plans', 'add', '--data-dir', dataDir, '--slug', slug, '--name', slug, '--track', 'single_site', '--hosting-type', 'shared', '--monthly', '9', ...extra], env)
    const said = add('chatty', ['--ai-modules', 'seo,chatbot', '--ai-tokens', '150000'])
    expect(said.code, said.err).toBe(0)
    expect(said.out).toContain('150000 AI tokens a site a month')
    expect(add('defaulted', ['--ai-modules', 'content'], { BERTH_AI_TOKENS_PER_SITE_MONTHLY: '42000' }).code).toBe(0)
    expect(add('seo-only', ['--ai-modules', 'seo']).code).toBe(0)
    expect(add('none-at-all', ['--ai-modules', 'translation', '--ai-tokens', '0']).code).toBe(0)
    const list = JSON.parse(run(['plans', 'list', '--json', '--data-dir', dataDir]).out) as { slug: string; features: { ai_tokens_monthly: number } }[]
    const tokens = Object.fromEntries(list.map((p) => [p.slug, p.features.ai_tokens_monthly]))
    expect(tokens).toMatchObject({ chatty: 150_000, defaulted: 42_000, 'seo-only': 0, 'none-at-all': 0, starter: 0, business: 100_000, performance: 500_000 })
    // The table has the column, and the figure on the plan's row.
    const table = run(['plans', 'list', '--data-dir', dataDir]).out.split('\n')
    expect(table[0]).toContain('AI TOKENS/MONTH')
    expect(table.find((l) => l.startsWith('chatty '))).toMatch(/\s150000\s+on sale$/)
    for (const bad of ['-5', '1.5', 'lots']) {
      const res = add('bad-tokens', ['--ai-modules', 'chatbot', `--ai-tokens=${bad}`])
      expect(res.code, bad).toBe(2)
      expect(res.err, bad).toContain('--ai-tokens must be')
    }
    expect(JSON.parse(run(['plans', 'list', '--json', '--data-dir', dataDir]).out).map((p: { slug: string }) => p.slug)).not.toContain('bad-tokens')
    } finally {
      await berth.stop()
    }
  })

  it('refuses bad plan input with status 2 and changes nothing', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'berth-cli-'))
    const berth = await startBerth({ dataDir })
    try {
    const base = ['plans', 'add', '--data-dir', dataDir, '--slug', 'ok-plan', '--name', 'Ok', '--hosting-type', 'vps', '--monthly', '5']
    const badTrack = run([...base, '--track', 'solo'])
    expect(badTrack.code).toBe(2)
    expect(badTrack.err).toContain('track')
    expect(run([...base, '--track', 'agency', '--ai-modules', 'mindreading']).code).toBe(2)
    expect(run(['plans', 'add', '--data-dir', dataDir, '--slug', 'starter', '--name', 'Dup', '--track', 'agency', '--hosting-type', 'vps', '--monthly', '5']).code).toBe(2)
    expect(run(['plans', 'deprecate', 'no-such-plan', '--data-dir', dataDir]).code).toBe(2)
    // A plan name is shown on pages and in answers: plain text only (issue 9).
    for (const name of ['Ok\u001b[31m', 'Ok\nplan', 'Ok\u0007', 'Ok\u0085']) {
      const bad = run(['plans', 'add', '--data-dir', dataDir, '--slug', 'ok-plan', '--name', name, '--track', 'agency', '--hosting-type', 'vps', '--monthly', '5'])
      expect(bad.code, JSON.stringify(name)).toBe(2)
      expect(bad.err).toContain('--name must be plain text')
    }
    const list = JSON.parse(run(['plans', 'list', '--json', '--data-dir', dataDir]).out)
    expect(list.map((p: { slug: string }) => p.slug)).not.toContain('ok-plan')
    expect(list.find((p: { slug: string }) => p.slug === 'starter').name).toBe('Starter')
    } finally {
      await berth.stop()
    }
  })

  it('reports a bad configuration with status 2 naming the key', () => {
    const res = run(['migrate'], { BERTH_SERVER_LISTEN: 'nowhere' })
    expect(res.code).toBe(2)
    expect(res.err).toContain('server.listen')
  })
})
