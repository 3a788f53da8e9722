import { spawn } from 'bun'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { commandLineOf } from '../src/domain/audit/command-line'
import { api, BINARY, startBerth, type Berth } from './helpers/binary'
import { ENGINE_SOCKET } from './helpers/engine'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites, siteShell } from './helpers/sites'

/**
 * `berth sites shell` on the compiled binary and real Docker, beside a running `berth serve` on
 * the same data folder, driven under a pseudo-terminal as an admin would use it: util-linux's
 * `script` (its -e returns the child's exit code) for a command, tmux for an interactive shell
 * that is typed into and resized. Then the site's owner reads each session in its audit trail.
 */
let berth: Berth
let shared: { slug: string; key: string }
let vps: { slug: string; key: string }
const ADMIN = `e2e-admin-${Math.random().toString(36).slice(2, 6)}`

beforeAll(async () => {
  berth = await startBerth()
  instanceOf(berth)
  ;[shared, vps] = await Promise.all([buy('svc_starter_monthly', 'shell-static'), buy('svc_business_monthly', 'shell-php')])
}, 120_000)
afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
})

async function buy(sku: string, stem: string) {
  const slug = uniqueSlug(stem)
  const { data } = await buyDirect(berth.url, { sku, slug })
  expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
  return { slug, key: data.api_key as string }
}

/** What the admin's login session has: no SUDO_USER, USER set, a terminal type. */
const adminEnv = () => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', USER: ADMIN, TERM: 'xterm', BERTH_CONTAINERS_DOCKER_SOCKET: ENGINE_SOCKET })

/** The command line of `berth sites shell` on this test's Berth. */
const shellCommand = (args: string[]) => commandLineOf([BINARY, 'sites', 'shell', '--data-dir', berth.dataDir, ...args])

/** Runs `berth sites shell ARGS` on a pseudo-terminal (script -qec); its exit code and what the terminal showed. */
async function underScript(args: string[]): Promise<{ code: number; output: string }> {
  const proc = spawn(['script', '-qec', shellCommand(args), '/dev/null'], { env: adminEnv(), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const [output, errors, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  // Lines end \r\n in the container's terminal, and the local one in raw mode keeps adding a \r (libuv's raw mode leaves ONLCR on).
  return { code, output: (output + errors).replace(/\r+\n/g, '\n') }
}

const auditLines = async (site: { slug: string; key: string }, search: string) => {
  const res = await api(berth.url, 'GET', `/sites/${site.slug}/logs/?type=audit&search=${encodeURIComponent(search)}`, { key: site.key })
  expect(res.status, res.text).toBe(200)
  expect(res.json.data).toMatchObject({ type: 'audit', file: null })
  return res.json.data.lines as string[]
}

describe('berth sites shell SLUG -- COMMAND', () => {
  it("returns the command's exit code, and the site's owner reads the session in its audit trail", async () => {
    const run = await underScript([shared.slug, '--', 'sh', '-c', 'echo in-$((6*7)); exit 7'])
    expect(run.output).toContain('in-42\n')
    expect(run.code, run.output).toBe(7)
    const lines = await auditLines(shared, 'exit 7')
    expect(lines).toEqual([expect.stringMatching(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z shell admin=${ADMIN} exit=7 duration_ms=\\d+ cmd: sh -c 'echo in-\\$\\(\\(6\\*7\\)\\); exit 7'$`))])
  })

  it('runs as the site user (uid 1000, in its home) by default, and as uid 0 with --user root', async () => {
    const site = await underScript([vps.slug, '--', 'sh', '-c', 'echo "uid=$(id -u) pwd=$PWD"'])
    expect(site.code, site.output).toBe(0)
    expect(site.output).toContain('uid=1000 pwd=/home/site\n')
    const root = await underScript([vps.slug, '--user', 'root', '--', 'sh', '-c', 'echo "uid=$(id -u)"'])
    expect(root.code, root.output).toBe(0)
    expect(root.output).toContain('uid=0\n')
    expect(await auditLines(vps, 'echo "uid=$(id -u)')).toEqual([
      expect.stringMatching(new RegExp(`Z shell admin=${ADMIN} exit=0 duration_ms=\\d+ cmd: sh -c 'echo "uid=`)),
      expect.stringMatching(new RegExp(`Z shell admin=${ADMIN} as=root exit=0 duration_ms=\\d+ cmd: sh -c 'echo "uid=`)),
    ])
  })

  it('runs without a local terminal too (a script, a pipe): the output comes through, the exit code back', async () => {
    const proc = spawn([BINARY, 'sites', 'shell', '--data-dir', berth.dataDir, shared.slug, '--', 'sh', '-c', 'echo piped-$((2*4)); exit 5'], { env: adminEnv(), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
    const [output, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited])
    expect(code).toBe(5)
    // The container's side is still a terminal (as with ssh -t): its lines end \r\n.
    expect(output).toBe('piped-8\r\n')
  })

  it('says an unknown slug plainly and exits 2, and so a bad --user', async () => {
    const run = await underScript(['no-such-site', '--', 'true'])
    expect(run.code).toBe(2)
    expect(run.output).toMatch(/berth: No site 'no-such-site' on this box/)
    const usage = await underScript([shared.slug, '--user', 'admin'])
    expect(usage.code).toBe(2)
    expect(usage.output).toMatch(/--user admin: give root/)
  })
})

/** A tmux server of this test's own (its own socket), so nothing else's sessions are touched. */
function tmux() {
  const socket = `berth-shell-${process.pid}-${Math.random().toString(36).slice(2, 8)}`
  const run = (...args: string[]) => {
    const r = Bun.spawnSync(['tmux', '-L', socket, ...args], { env: adminEnv() })
    if (r.exitCode !== 0) throw new Error(`tmux ${args.join(' ')}: ${r.stderr.toString()}`)
    return r.stdout.toString()
  }
  const screen = () => run('capture-pane', '-p', '-t', 'admin')
  return {
    run,
    screen,
    /** Waits until the pane shows text matching `pattern`; `ask`, when given, runs first and every half second. */
    async waitFor(pattern: RegExp, timeoutMs = 15_000, ask?: () => void): Promise<string> {
      const deadline = Date.now() + timeoutMs
      for (let asked = 0; ; ) {
        if (ask && Date.now() - asked >= 500) {
          ask()
          asked = Date.now()
        }
        const text = screen()
        if (pattern.test(text)) return text
        if (Date.now() > deadline) throw new Error(`the terminal never showed ${pattern}:\n${text}`)
        await Bun.sleep(50)
      }
    },
    type: (text: string) => run('send-keys', '-t', 'admin', '-l', text),
    enter: () => run('send-keys', '-t', 'admin', 'Enter'),
    kill: () => Bun.spawnSync(['tmux', '-L', socket, 'kill-server']),
  }
}

describe('berth sites shell SLUG, interactive', () => {
  it.each([
    // The pane as tmux captures it, trailing spaces left out: bash's prompt, then busybox ash's.
    ['berth/php (bash)', () => vps, /^site@[^\s]+:~\$$/m],
    ['berth/static (sh)', () => shared, /^~ \$$/m],
  ])('on %s: a login shell in raw mode that follows the window, and exit 3 is its exit code', async (_, siteOf, prompt) => {
    const site = siteOf()
    const dir = mkdtempSync(join(tmpdir(), 'berth-shell-'))
    const exitFile = join(dir, 'exit')
    const t = tmux()
    try {
      t.run('new-session', '-d', '-s', 'admin', '-x', '100', '-y', '30', `${shellCommand([site.slug])}; echo $? > ${exitFile}; sleep 60`)
      // The first prompt, whatever follows it on its line: busybox ash asks the terminal where its
      // cursor is (ESC[6n) as it starts, and on a slow start tmux's answer comes while the line is
      // still cooked, so the terminal echoes it (`~ $ ^[[6;5R`); ash reads the answer all the same.
      await t.waitFor(new RegExp(prompt.source.replace(/\$$/, ''), 'm'))
      t.type('echo $((6*7))')
      t.enter()
      await t.waitFor(/^42$/m)
      // The size it started at, then the window made larger: SIGWINCH, and the shell's terminal follows.
      t.type('stty size')
      t.enter()
      await t.waitFor(/^30 100$/m)
      t.run('resize-window', '-t', 'admin', '-x', '120', '-y', '40')
      // The new size reaches the container through the engine's API, a moment after SIGWINCH:
      // asked again until it shows (a terminal that never follows fails after 15 s).
      await t.waitFor(/^40 120$/m, 15_000, () => {
        t.type('stty size')
        t.enter()
      })
      // Raw mode: Ctrl-C reaches the shell (which drops the line) instead of ending berth.
      // A terminal drops its queues with an interrupt (what was typed, what was to be shown), so
      // each step waits for the shell to have echoed the last.
      t.type('sleep 30')
      await t.waitFor(/sleep 30$/m)
      t.run('send-keys', '-t', 'admin', 'C-c')
      await t.waitFor(new RegExp(`sleep 30.*\\n${prompt.source.slice(1)}`, 'm'))
      t.type('echo still-$((1+1))')
      t.enter()
      await t.waitFor(/^still-2$/m)
      t.type('exit 3')
      t.enter()
      const deadline = Date.now() + 15_000
      while (!existsSync(exitFile) || readFileSync(exitFile, 'utf8') === '') {
        if (Date.now() > deadline) throw new Error(`berth sites shell did not end:\n${t.screen()}`)
        await Bun.sleep(50)
      }
      expect(readFileSync(exitFile, 'utf8').trim()).toBe('3')
    } finally {
      t.kill()
      rmSync(dir, { recursive: true, force: true })
    }
    const lines = await auditLines(site, `shell admin=${ADMIN} exit=3 `)
    // An interactive session has no command.
    expect(lines).toEqual([expect.stringMatching(new RegExp(`Z shell admin=${ADMIN} exit=3 duration_ms=\\d+$`))])
  }, 60_000)

  it("ends when the admin's terminal closes (SIGHUP): nothing it started is left in the site, and the record says why", async () => {
    const t = tmux()
    const marker = `sleep 3${Math.floor(Math.random() * 90 + 10)}`
    try {
      t.run('new-session', '-d', '-s', 'admin', '-x', '100', '-y', '30', shellCommand([shared.slug, '--', 'sh', '-c', `echo ready-$((2+3)); ${marker}`]))
      await t.waitFor(/^ready-5$/m)
    } finally {
      t.kill()
    }
    const deadline = Date.now() + 15_000
    let lines: string[] = []
    while (!(lines = await auditLines(shared, marker)).some((l) => l.includes('reason='))) {
      if (Date.now() > deadline) throw new Error(`the record was not completed: ${lines.join('\n')}`)
      await Bun.sleep(100)
    }
    expect(lines).toEqual([expect.stringMatching(new RegExp(`Z shell admin=${ADMIN} exit=none duration_ms=\\d+ reason="the admin's terminal hung up" cmd: sh -c 'echo ready-\\$\\(\\(2\\+3\\)\\); ${marker}'$`))])
    // The pattern does not match the command line of the shell that looks (slee[p]).
    const left = await siteShell(berth, shared.slug, `cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\000' ' ' | grep -c '${marker.replace('sleep', 'slee[p]')}' || true`)
    expect(left.output.trim()).toBe('0')
  }, 30_000)
})
