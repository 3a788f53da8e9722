import { spawn } from 'bun'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BINARY, startBerth, type Berth } from './helpers/binary'
import { ENGINE_SOCKET } from './helpers/engine'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites, siteShell } from './helpers/sites'

/**
 * `berth sites shell --user root` (issue 36, item 8) on the compiled binary and real sites: a
 * root terminal has HOME=/root and runs none of the scripts the tenant wrote in its home
 * (~/.bash_profile, ~/.profile, ~/.bashrc), on berth/php (bash) and berth/static (busybox sh).
 * The site user's own login shell still runs them.
 */
let berth: Berth
let vps: string
let shared: string

beforeAll(async () => {
  berth = await startBerth()
  instanceOf(berth)
  ;[vps, shared] = await Promise.all([['svc_business_monthly', 'root-php'], ['svc_starter_monthly', 'root-static']].map(async ([sku, stem]) => {
    const slug = uniqueSlug(stem!)
    const { data } = await buyDirect(berth.url, { sku, slug })
    expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
    return slug
  }))
  // The tenant's login and rc scripts: each leaves a marker in /tmp, named by the uid it ran as,
  // and says so on the terminal.
  for (const slug of [vps, shared]) {
    const script = (name: string) => `printf '%s\\n' 'echo "${name}-ran-as-$(id -u)"; echo "${name}" >> /tmp/tenant-script-ran-as-$(id -u)' > ${name}`
    const wrote = await siteShell(berth, slug, ['.bash_profile', '.profile', '.bashrc'].map(script).join(' && '))
    expect(wrote.code, wrote.output).toBe(0)
  }
}, 180_000)
afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
})

/** `berth sites shell SLUG ARGS` with `input` piped in (no local terminal): its exit code and output. */
async function shell(slug: string, args: string[], input: string): Promise<{ code: number; output: string }> {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', USER: 'e2e-admin', BERTH_CONTAINERS_DOCKER_SOCKET: ENGINE_SOCKET }
  const proc = spawn([BINARY, 'sites', 'shell', '--data-dir', berth.dataDir, slug, ...args], { env, stdin: 'pipe', stdout: 'pipe', stderr: 'pipe' })
  proc.stdin.write(input)
  await proc.stdin.flush()
  const [output, errors, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, output: (output + errors).replace(/\r+\n/g, '\n') }
}

/** The markers the tenant's scripts left, by the uid they ran as. */
const markers = async (slug: string) => (await siteShell(berth, slug, 'cat /tmp/tenant-script-ran-as-* 2>/dev/null; ls /tmp | grep tenant-script || true')).output

describe('berth sites shell --user root', () => {
  it.each([['berth/php (bash)', () => vps], ['berth/static (sh)', () => shared]])('on %s: HOME=/root, and none of the tenant\'s scripts runs', async (_, slugOf) => {
    const slug = slugOf()
    const run = await shell(slug, ['--user', 'root'], 'echo "who=$(id -u) home=$HOME pwd=$PWD"; exit 4\n')
    expect(run.output).toContain('who=0 home=/root pwd=/home/site\n')
    expect(run.code, run.output).toBe(4)
    expect(run.output).not.toMatch(/-ran-as-/)
    expect(await markers(slug)).not.toContain('tenant-script-ran-as-0')
    // A root command gets the same HOME.
    const command = await shell(slug, ['--user', 'root', '--', 'sh', '-c', 'echo "cmd-home=$HOME"'], '')
    expect(command.output).toContain('cmd-home=/root\n')
  }, 60_000)

  it("leaves the site user's login shell as it was: it runs the tenant's own profile", async () => {
    const run = await shell(vps, [], 'echo "who=$(id -u) home=$HOME"; exit 0\n')
    expect(run.code, run.output).toBe(0)
    expect(run.output).toContain('.bash_profile-ran-as-1000')
    expect(run.output).toContain('who=1000 home=/home/site\n')
    expect(await markers(vps)).not.toContain('tenant-script-ran-as-0')
  }, 60_000)
})
