import { Database } from 'bun:sqlite'
import Docker from 'dockerode'
import { join } from 'node:path'
import type { Berth } from './binary'
import { ENGINE_SOCKET } from './engine'
import { removeEngineInstance } from './engine-instance'

/** Containers, volumes and networks of the sites a test's Berth made, through the Docker API. */
export const docker = new Docker({ socketPath: ENGINE_SOCKET })

const instances = new WeakMap<Berth, string>()

/**
 * The Berth instance id (in the names and labels of everything it makes), read from its
 * database once and remembered, so that it is still known after `dispose` removed the data.
 */
export function instanceOf(b: Berth): string | undefined {
  if (!instances.has(b)) {
    try {
      const db = new Database(join(b.dataDir, 'berth.db'), { readonly: true })
      const row = db.query("SELECT value FROM settings WHERE key = 'instance_id'").get() as { value: string } | null
      db.close()
      if (row) instances.set(b, row.value)
    } catch {
      // no database (yet, or any more)
    }
  }
  return instances.get(b)
}

const siteFilter = (b: Berth, slug: string) => ({ label: [`dev.berth.instance=${instanceOf(b)}`, `dev.berth.site-slug=${slug}`] })

/**
 * Removes the containers, networks and volumes this test's Berth created. Call `instanceOf`
 * while Berth runs, and this after it stopped (else reconciliation may start sites again).
 */
export async function removeInstanceSites(b: Berth | undefined) {
  const instance = b && instanceOf(b)
  if (instance) await removeSitesOf(instance)
}

/** Removes the containers, networks and volumes labelled with the Berth instance `instance`. */
export async function removeSitesOf(instance: string) {
  await removeEngineInstance(docker, instance)
}

/** The host folder of the site's home volume (what Berth's files API works on). */
export async function hostHome(b: Berth, slug: string): Promise<string> {
  const [volume] = (await docker.listVolumes({ filters: siteFilter(b, slug) })).Volumes ?? []
  if (!volume) throw new Error(`no volume for ${slug}`)
  return volume.Mountpoint
}

/**
 * `make` (a `docker exec` into a site's container), waited out while the container is paused:
 * Berth pauses a site's container for the instant of an archive (a snapshot, or a backup at a
 * maintenance pass, which tests run every few seconds), and the engine refuses an exec from
 * outside meanwhile (409), as it would an admin's. A freeze lasts well under a second; 10 s is
 * the bound.
 */
export async function unpaused<T>(make: () => Promise<T>): Promise<T> {
  for (const deadline = Date.now() + 10_000; ;) {
    try {
      return await make()
    } catch (err) {
      if (!/is paused/.test((err as Error).message) || Date.now() > deadline) throw err
      await Bun.sleep(50)
    }
  }
}

/**
 * Runs a shell script in the site's container as the site user (uid 1000), in its home, as a
 * tenant with a shell would; returns the exit code and the combined output. `b` is a Berth this
 * test started, or the instance id of one it did not (systemd-unit.solo.e2e).
 */
export async function siteShell(b: Berth | string, slug: string, script: string): Promise<{ code: number; output: string }> {
  const instance = typeof b === 'string' ? b : instanceOf(b)
  const [found] = await docker.listContainers({ filters: { label: [`dev.berth.instance=${instance}`, `dev.berth.site-slug=${slug}`] } })
  if (!found) throw new Error(`no running container for ${slug}`)
  const exec = await unpaused(() => docker.getContainer(found.Id).exec({ Cmd: ['sh', '-c', script], User: '1000:1000', WorkingDir: '/home/site', AttachStdout: true, AttachStderr: true, Tty: true }))
  const stream = await exec.start({ Tty: true })
  let output = ''
  stream.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
  await new Promise((done) => stream.on('end', done))
  return { code: (await exec.inspect()).ExitCode ?? -1, output: output.replace(/\r\n/g, '\n') }
}

/** Runs a command in a container as the site user and returns what it printed (stdout and stderr). */
export async function execIn(containerId: string, cmd: string[]): Promise<string> {
  const exec = await docker.getContainer(containerId).exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true, User: '1000' })
  const stream = await exec.start({})
  const chunks: Buffer[] = []
  stream.on('data', (c: Buffer) => chunks.push(c))
  await new Promise((resolve) => stream.on('end', resolve))
  // The attach stream is multiplexed: 8-byte frame headers before each chunk of output.
  const raw = Buffer.concat(chunks)
  let out = ''
  for (let i = 0; i + 8 <= raw.length; ) {
    const size = raw.readUInt32BE(i + 4)
    out += raw.subarray(i + 8, i + 8 + size).toString()
    i += 8 + size
  }
  return out
}
