import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough, Readable } from 'node:stream'
import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseSpec, DbEngine } from '../../domain/databases'
import { memoryLogger } from '../../lib/logger'
import { removeEngineInstance } from '../../../test/helpers/engine-instance'
import { DockerRuntime } from '../runtime/docker'
import { buildImages, IMAGES } from '../runtime/images'
import type { SiteSpec } from '../runtime/types'
import { DatabaseCommandError } from './errors'
import { DB_IMAGES } from './images'
import { localDatabaseRuntime } from './local'
import { databaseNames } from './runtime'

// Real engine, real servers, the real site image as the client: each database is made by the
// runtime on a site's network (made by the real site runtime) and used from that site's container
// with the engine's own client, as a site's app would. The site image with the clients is
// berth/app:1; BERTH_TEST_APP_IMAGE builds and uses another tag (a changed image under test
// while other runs use the real one).
const SOCKET = '/var/run/docker.sock'
const docker = new Docker({ socketPath: SOCKET })
const instanceId = `d${randomBytes(4).toString('hex')}`
const log = memoryLogger()
const APP_IMAGE = process.env.BERTH_TEST_APP_IMAGE ?? IMAGES.app
const sites = new DockerRuntime({ socketPath: SOCKET, instanceId, subnetPool: '10.233.0.0/16', pidsLimit: 256, log })
const dbs = localDatabaseRuntime({ socketPath: SOCKET, instanceId, log, images: DB_IMAGES })
const password = () => randomBytes(24).toString('base64').replace(/[^A-Za-z0-9]/g, '').slice(0, 32).padEnd(32, 'x')

function siteSpec(slug: string): SiteSpec {
  return { siteId: `id-${slug}`, slug, hostingType: 'vps', image: APP_IMAGE, memoryMb: 256, cpuCores: 0.5, pidsLimit: 256, diskGb: 1, sshPort: null }
}

function dbSpec(engine: DbEngine, over: Partial<DatabaseSpec> = {}): DatabaseSpec {
  return { siteId: 'id-alpha', slug: 'alpha', name: `main_${engine.slice(0, 2)}`, engine, memoryMb: 256, cpuCores: 0.5, diskGb: 1, user: 'site', password: password(), ...over }
}

/** The engine's own client as a site runs it: a shell command line writing or reading a set of words. */
const CLIENT: Record<DbEngine, { write(host: string, s: DatabaseSpec, word: string): string; read(host: string, s: DatabaseSpec): string }> = {
  postgres: {
    write: (h, s, w) => `psql "postgres://site:${s.password}@${h}:5432/${s.name}?connect_timeout=5" -X -v ON_ERROR_STOP=1 -qAtc "CREATE TABLE IF NOT EXISTS t(v text); INSERT INTO t VALUES ('${w}')"`,
    read: (h, s) => `psql "postgres://site:${s.password}@${h}:5432/${s.name}?connect_timeout=5" -X -v ON_ERROR_STOP=1 -qAtc "SELECT string_agg(v, ',' ORDER BY v) FROM t"`,
  },
  mariadb: {
    write: (h, s, w) => `MYSQL_PWD=${s.password} mariadb --connect-timeout=5 -h ${h} -P 3306 -u site ${s.name} -e "CREATE TABLE IF NOT EXISTS t(v varchar(20)); INSERT INTO t VALUES ('${w}')"`,
    read: (h, s) => `MYSQL_PWD=${s.password} mariadb --connect-timeout=5 -h ${h} -P 3306 -u site -N -B ${s.name} -e "SELECT GROUP_CONCAT(v ORDER BY v) FROM t"`,
  },
  redis: {
    write: (h, s, w) => `[ "$(timeout 10 redis-cli --no-auth-warning -u redis://site:${s.password}@${h}:6379/0 SADD t ${w})" = 1 ]`,
    read: (h, s) => `out=$(timeout 10 redis-cli --no-auth-warning -u redis://site:${s.password}@${h}:6379/0 SORT t ALPHA) && case "$out" in *ERR*|*NOAUTH*|*WRONGPASS*) echo "$out"; exit 1;; esac && echo "$out" | paste -sd,`,
  },
}

const inSite = async (slug: string, line: string) => {
  const r = await sites.exec(slug, ['bash', '-c', line], { timeoutMs: 20_000 })
  return { code: r.exitCode, out: r.output.trim() }
}
const write = async (slug: string, s: DatabaseSpec, word: string) => expect(await inSite(slug, CLIENT[s.engine].write(`db-${s.name}`, s, word))).toMatchObject({ code: 0 })
const read = async (slug: string, s: DatabaseSpec) => {
  const r = await inSite(slug, CLIENT[s.engine].read(`db-${s.name}`, s))
  expect(r.code, r.out).toBe(0)
  return r.out
}
const container = (s: DatabaseSpec) => docker.getContainer(databaseNames(instanceId, s.slug, s.name).container).inspect()

beforeAll(async () => {
  // Quick when the images exist with the same definition; each base takes one to three minutes the first time.
  for (const only of ['postgres', 'mariadb', 'redis', 'app'] as const) {
    await buildImages({ socketPath: SOCKET, only, cacheDir: join(tmpdir(), 'berth-test-debian-cache'), tags: { app: APP_IMAGE }, env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' } })
  }
  await Promise.all([sites.ensureSite(siteSpec('alpha')), sites.ensureSite(siteSpec('beta'))])
}, 1_200_000)

afterAll(async () => {
  await removeEngineInstance(docker, instanceId)
}, 180_000)

const VERSIONS: Record<DbEngine, RegExp> = { postgres: /^15\.\d+$/, mariadb: /^10\.11\.\d+$/, redis: /^7\.0\.\d+$/ }

describe.each(['postgres', 'mariadb', 'redis'] as DbEngine[])('DockerDatabaseRuntime: %s', (engine) => {
  const spec = dbSpec(engine)

  it('starts a server that the site\'s container reaches as db-{name} with the engine\'s own client, and reports its version', async () => {
    const running = await dbs.ensure(spec)
    expect(running.host).toBe(`db-${spec.name}`)
    expect(running.port).toBe({ postgres: 5432, mariadb: 3306, redis: 6379 }[engine])
    expect(running.version).toMatch(VERSIONS[engine])
    await write('alpha', spec, 'before')
    expect(await read('alpha', spec)).toBe('before')
    // Its server's own log: the line that says it takes connections, newest last; none for a database without a container.
    const ready = { postgres: /database system is ready to accept connections/, mariadb: /ready for connections/, redis: /Ready to accept connections/ }[engine]
    const lines = (await dbs.logs(spec.slug, spec.name, 200))!
    expect(lines.some((line) => ready.test(line)), lines.join('\n')).toBe(true)
    expect((await dbs.logs(spec.slug, spec.name, 1))!).toEqual([lines.at(-1)])
    expect(await dbs.logs(spec.slug, 'nothere', 10)).toBeNull()
  }, 180_000)

  it('is out of reach of another site\'s container (by name and by address) and publishes nothing on the host', async () => {
    const info = await container(spec)
    const address = Object.values(info.NetworkSettings.Networks)[0]!.IPAddress
    expect(address).toMatch(/^\d+\.\d+\.\d+\.\d+$/)
    expect((await inSite('beta', `getent hosts db-${spec.name}`)).code).not.toBe(0)
    const port = { postgres: 5432, mariadb: 3306, redis: 6379 }[engine]
    expect((await inSite('beta', `timeout 3 bash -c 'echo > /dev/tcp/${address}/${port}'`)).code).not.toBe(0)
    // ... while alpha reaches the same address: the refusal above is the isolation, not a dead port.
    expect((await inSite('alpha', `timeout 3 bash -c 'echo > /dev/tcp/${address}/${port}'`)).code).toBe(0)
    expect(info.HostConfig.PortBindings ?? {}).toEqual({})
    expect(Object.values(info.NetworkSettings.Ports ?? {}).filter((b) => b && b.length > 0)).toEqual([])
  }, 60_000)

  it('runs with the memory and CPU limits asked, its settings tuned to the memory', async () => {
    const info = await container(spec)
    expect(info.HostConfig.Memory).toBe(256 * 1024 * 1024)
    expect(info.HostConfig.MemorySwap).toBe(256 * 1024 * 1024)
    expect(info.HostConfig.NanoCpus).toBe(0.5e9)
    const setting = {
      postgres: `psql "postgres://site:${spec.password}@db-${spec.name}/${spec.name}" -XAtc 'SHOW shared_buffers'`,
      mariadb: `MYSQL_PWD=${spec.password} mariadb -h db-${spec.name} -u site -N -B -e 'SELECT @@innodb_buffer_pool_size DIV 1048576'`,
      redis: `redis-cli --no-auth-warning -u redis://site:${spec.password}@db-${spec.name}:6379/0 INFO memory | grep '^maxmemory:' | tr -d '\\r'`,
    }[engine]
    expect((await inSite('alpha', setting)).out).toBe({ postgres: '64MB', mariadb: '102', redis: `maxmemory:${192 * 1024 * 1024}` }[engine])
  }, 60_000)

  it('ensure again changes nothing: same container, not restarted', async () => {
    const before = await container(spec)
    await dbs.ensure(spec)
    const after = await container(spec)
    expect(after.Id).toBe(before.Id)
    expect(after.State.StartedAt).toBe(before.State.StartedAt)
  }, 60_000)

  it('restores a dump: rows written after it are gone, rows before it are back', async () => {
    const dump = new PassThrough()
    const chunks: Buffer[] = []
    dump.on('data', (c: Buffer) => chunks.push(c))
    const { bytes } = await dbs.dump(spec, dump)
    expect(bytes).toBeGreaterThan(0)
    expect(Buffer.concat(chunks).length).toBe(bytes)
    const magic = { postgres: 'PGDMP', mariadb: 'MariaDB dump', redis: 'REDIS' }[engine]
    expect(Buffer.concat(chunks).subarray(0, 200).toString('latin1')).toContain(magic)
    await write('alpha', spec, 'after')
    expect(await read('alpha', spec)).toBe('after,before')
    await dbs.restore(spec, Readable.from([Buffer.concat(chunks)]))
    expect(await read('alpha', spec)).toBe('before')
  }, 120_000)

  it('a restore of a broken dump fails loudly and leaves the data as it was', async () => {
    await expect(dbs.restore(spec, Readable.from([Buffer.from('not a dump at all\n')]))).rejects.toBeInstanceOf(DatabaseCommandError)
    expect(await read('alpha', spec)).toBe('before')
  }, 60_000)

  it('a killed server loses no acknowledged write, nor the restore before it', async () => {
    await write('alpha', spec, 'killed')
    await docker.getContainer((await container(spec)).Id).kill()
    await dbs.ensure(spec)
    expect(await read('alpha', spec)).toBe('before,killed')
  }, 120_000)

  it('setPassword: the new password works, the old one no longer does, the data stays', async () => {
    const fresh = password()
    await dbs.setPassword(spec, fresh)
    const old = await inSite('alpha', CLIENT[engine].read(`db-${spec.name}`, spec))
    expect(old.code).not.toBe(0)
    expect(old.out).not.toContain('before')
    spec.password = fresh
    expect(await read('alpha', spec)).toBe('before,killed')
  }, 60_000)

  it('a new memory limit recreates the container with the data kept', async () => {
    const before = await container(spec)
    await dbs.ensure({ ...spec, memoryMb: 320 })
    const after = await container(spec)
    expect(after.Id).not.toBe(before.Id)
    expect(after.HostConfig.Memory).toBe(320 * 1024 * 1024)
    expect(await read('alpha', spec)).toBe('before,killed')
    spec.memoryMb = 320
  }, 120_000)

  it('stop, then remove keeping the volume (the deletion grace), then ensure brings the same data back; remove with the volume ends it', async () => {
    const names = databaseNames(instanceId, spec.slug, spec.name)
    await dbs.stop(spec.slug, spec.name)
    expect((await dbs.inspect(spec.slug, spec.name))?.running).toBe(false)
    await dbs.remove(spec.slug, spec.name, { volume: false })
    expect(await dbs.inspect(spec.slug, spec.name)).toBeNull()
    expect((await docker.getVolume(names.volume).inspect()).Name).toBe(names.volume)
    await dbs.ensure(spec)
    expect(await read('alpha', spec)).toBe('before,killed')
    const state = await dbs.inspect(spec.slug, spec.name)
    expect(state?.running).toBe(true)
    expect(state?.sizeBytes).toBeGreaterThan(0)
    expect((await dbs.listManaged()).filter((d) => d.name === spec.name)).toEqual([{ slug: 'alpha', name: spec.name, engine, running: true }])
    await dbs.remove(spec.slug, spec.name, { volume: true })
    await expect(docker.getVolume(names.volume).inspect()).rejects.toMatchObject({ statusCode: 404 })
    await dbs.remove(spec.slug, spec.name, { volume: true })
  }, 180_000)
})

describe('DockerDatabaseRuntime: a large dump to a slow writer', () => {
  it('streams it whole, with the writer\'s pace (the exec\'s connection pauses), and it restores', async () => {
    const spec = dbSpec('postgres', { name: 'big' })
    await dbs.ensure(spec)
    const url = `postgres://site:${spec.password}@db-big/big`
    // About 40 MB of incompressible text: several times what the pipes between engine and Berth hold.
    expect((await inSite('alpha', `psql "${url}" -X -v ON_ERROR_STOP=1 -qc "CREATE TABLE b AS SELECT g AS id, string_agg(md5(random()::text), '') AS v FROM generate_series(1, 20000) g, generate_series(1, 60) h GROUP BY g"`)).code).toBe(0)
    let written = 0
    let waits = 0
    const chunks: Buffer[] = []
    const { Writable } = await import('node:stream')
    const slow = new Writable({
      highWaterMark: 64 * 1024,
      write(chunk: Buffer, _enc, done) {
        chunks.push(chunk)
        written += chunk.length
        // Slower than the engine: a pause now and then.
        if (chunks.length % 50 === 0) {
          waits++
          setTimeout(done, 5)
        } else setImmediate(done)
      },
    })
    const { bytes } = await dbs.dump(spec, slow)
    await new Promise((resolve) => slow.end(resolve))
    expect(bytes).toBeGreaterThan(20 * 1024 * 1024)
    expect(written).toBe(bytes)
    expect(waits).toBeGreaterThan(0)
    expect((await inSite('alpha', `psql "${url}" -X -qc "DELETE FROM b WHERE id > 10"`)).code).toBe(0)
    await dbs.restore(spec, Readable.from(chunks))
    expect(await inSite('alpha', `psql "${url}" -XAtc "SELECT count(*) FROM b"`)).toMatchObject({ code: 0, out: '20000' })
  }, 300_000)
})

describe('DockerDatabaseRuntime: addresses on the site network', () => {
  it("a database started while its site's container is stopped takes an address of its own, never the site's (which the site asks for again at its start)", async () => {
    await sites.ensureSite(siteSpec('gamma'))
    const siteAddress = (await docker.getContainer((await sites.inspectSite('gamma'))!.containerId).inspect()).NetworkSettings.Networks[databaseNames(instanceId, 'gamma', 'x').network]!.IPAddress
    await sites.stopSite('gamma')
    const spec = dbSpec('redis', { siteId: 'id-gamma', slug: 'gamma', name: 'late' })
    await dbs.ensure(spec)
    const dbAddress = (await container(spec)).NetworkSettings.Networks[databaseNames(instanceId, 'gamma', 'late').network]!.IPAddress
    expect(dbAddress).not.toBe(siteAddress)
    // Before: the engine handed the database the first free address, the site's, and the site could not start again.
    await sites.ensureSite(siteSpec('gamma'))
    await write('gamma', spec, 'reached')
    expect(await read('gamma', spec)).toBe('reached')
  }, 180_000)
})
