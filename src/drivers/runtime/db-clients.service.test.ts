import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Docker from 'dockerode'
import { beforeAll, describe, expect, it } from 'vitest'
import { buildImages, IMAGES } from './images'

// The site images hold what a site needs to use its databases (issue 40): the engines' own
// clients and PHP's extensions for them (WordPress needs mysqli). BERTH_TEST_PHP_IMAGE and
// BERTH_TEST_APP_IMAGE build and check other tags (a changed image under test while other runs
// use the real one).
const SOCKET = '/var/run/docker.sock'
const docker = new Docker({ socketPath: SOCKET })
const TAGS = { php: process.env.BERTH_TEST_PHP_IMAGE ?? IMAGES.php, app: process.env.BERTH_TEST_APP_IMAGE ?? IMAGES.app }

beforeAll(async () => {
  for (const only of ['php', 'app'] as const) {
    await buildImages({ socketPath: SOCKET, only, cacheDir: join(tmpdir(), 'berth-test-debian-cache'), tags: TAGS, env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' } })
  }
}, 1_200_000)

/** Runs a shell line in a throwaway container of `image`, as the site user, without network. */
async function run(image: string, line: string): Promise<string> {
  const container = await docker.createContainer({ Image: image, Entrypoint: ['bash', '-c', line], User: '1000:1000', HostConfig: { NetworkMode: 'none', AutoRemove: false } })
  try {
    await container.start()
    await container.wait()
    const raw = (await container.logs({ stdout: true, stderr: true })) as unknown as Buffer
    const parts: Buffer[] = []
    for (let at = 0; at + 8 <= raw.length; at += 8 + raw.readUInt32BE(at + 4)) parts.push(raw.subarray(at + 8, at + 8 + raw.readUInt32BE(at + 4)))
    return Buffer.concat(parts).toString('utf8')
  } finally {
    await container.remove({ force: true })
  }
}

describe.each(['php', 'app'] as const)('the %s image and the databases', (kind) => {
  it('has PHP\'s mysqli, pdo_mysql, pgsql, pdo_pgsql and redis extensions', async () => {
    const modules = (await run(TAGS[kind], 'php -m')).split('\n').map((l) => l.trim())
    for (const m of ['mysqli', 'pdo_mysql', 'pgsql', 'pdo_pgsql', 'redis']) expect(modules).toContain(m)
  }, 60_000)

  it('has the extensions PHP apps ask for besides (WordPress\'s, Laravel\'s): xml, dom, simplexml, mbstring, curl, gd, zip, intl, bcmath', async () => {
    const modules = (await run(TAGS[kind], 'php -m')).split('\n').map((l) => l.trim())
    for (const m of ['xml', 'dom', 'SimpleXML', 'xmlreader', 'xmlwriter', 'mbstring', 'curl', 'gd', 'zip', 'intl', 'bcmath']) expect(modules).toContain(m)
    // They work, not only load: a string through mbstring and intl, a document through dom, an image through gd.
    const out = await run(TAGS[kind], `php -r 'echo mb_strtoupper("größe"), " ", (new NumberFormatter("de_DE", NumberFormatter::DECIMAL))->format(1234.5), " ", (new DOMDocument())->loadXML("<a>b</a>") ? "xml" : "no", " ", imagesx(imagecreatetruecolor(3, 2)), "\n";'`)
    expect(out).toBe('GRÖSSE 1.234,5 xml 3\n')
  }, 60_000)

  it('has the engines\' clients: psql 15, mariadb and mariadb-dump 10.11, redis-cli 7.0', async () => {
    const out = await run(TAGS[kind], 'psql --version; mariadb --version; mariadb-dump --version; redis-cli --version')
    expect(out).toMatch(/psql \(PostgreSQL\) 15\./)
    expect(out).toMatch(/mariadb .*Distrib 10\.11\./)
    expect(out).toMatch(/mariadb-dump .*Distrib 10\.11\./)
    expect(out).toMatch(/redis-cli 7\.0\./)
  }, 60_000)
})
