import { spawn } from 'bun'
import { existsSync } from 'node:fs'
import { rm, writeFile, open } from 'node:fs/promises'
import { promises as dns } from 'node:dns'
import { dirname, join } from 'node:path'
import type { Config } from '../../config/config'
import { shiftedClock } from '../../lib/clock'
import { selectOffsite } from '../offsite/select'
import { engineVersionAt, missingImagesAt } from '../runtime/engine-facts'
import { diskSpaceOf } from './disk-space'
import { portState } from './ports'
import type { BoxProbes } from './types'

/** How long the ACME directory and systemctl get to answer. */
const ANSWER_TIMEOUT_MS = 10_000
/** How long the off-box destination gets for its test object, retries included (an S3 request alone may take a minute). */
const OFFSITE_TIMEOUT_MS = 30_000

/** The real box, as the config describes it: its engine, its destination, the clock Berth works by. */
export function boxProbes(config: Config): BoxProbes {
  const clock = shiftedClock(config.dev.clockOffsetSeconds * 1000)
  return {
    now: () => clock.now(),
    writeProbe,
    existingAncestor(dir) {
      let at = dir
      while (!existsSync(at) && dirname(at) !== at) at = dirname(at)
      return at
    },
    diskSpace: diskSpaceOf,
    missingCommands: (names) => names.filter((name) => !Bun.which(name, { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' })),
    loopDevices: () => existsSync('/dev/loop-control'),
    engineVersion: () => engineVersionAt(config.containers.dockerSocket),
    missingImages: (images) => missingImagesAt(config.containers.dockerSocket, images),
    portState,
    fetchDirectory,
    async resolveNs(name) {
      return orNone(() => dns.resolveNs(name))
    },
    async resolveAddresses(name) {
      const [v4, v6] = await Promise.all([orNone(() => dns.resolve4(name)), orNone(() => dns.resolve6(name))])
      return [...v4, ...v6]
    },
    unitState,
    async offsiteProbe() {
      const destination = selectOffsite(config.offsite)
      if (!destination) throw new Error('offsite.url is empty')
      let timer: Timer | undefined
      const late = new Promise<never>((_, fail) => {
        timer = setTimeout(() => fail(new Error(`${destination.describe} did not take a test object within ${OFFSITE_TIMEOUT_MS / 1000} s`)), OFFSITE_TIMEOUT_MS)
      })
      try {
        await Promise.race([destination.probe(), late])
      } finally {
        clearTimeout(timer)
      }
    },
  }
}

/** Creates, syncs and removes a file: a read-only mount fails here even for root, as a full disk does. */
async function writeProbe(dir: string): Promise<void> {
  const path = join(dir, `.berth-doctor-${process.pid}`)
  try {
    await writeFile(path, 'berth doctor\n', { flag: 'wx' })
    const handle = await open(path, 'r+')
    try {
      await handle.sync()
    } finally {
      await handle.close()
    }
  } catch (err) {
    throw new Error((err as { code?: string }).code ?? (err as Error).message)
  } finally {
    await rm(path, { force: true }).catch(() => {})
  }
}

/** The resolver's answer, [] for a name that has no such records (NXDOMAIN, NODATA); other failures throw. */
async function orNone(lookup: () => Promise<string[]>): Promise<string[]> {
  try {
    return await lookup()
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code === 'ENOTFOUND' || code === 'ENODATA') return []
    throw new Error(`the system resolver did not answer (${code ?? (err as Error).message})`)
  }
}

async function fetchDirectory(url: string, caBundle: string | null) {
  const res = await fetch(url, {
    signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS),
    headers: { accept: 'application/json' },
    ...(caBundle ? { tls: { ca: caBundle } } : {}),
  })
  const date = res.headers.get('date')
  const text = await res.text()
  let body: unknown = null
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON: the check says so
  }
  return { status: res.status, dateMs: date ? Date.parse(date) : null, body }
}

/** `systemctl is-enabled UNIT`'s word (it exits non-zero for every state but enabled), or null without systemctl. */
async function unitState(unit: string): Promise<string | null> {
  let proc
  try {
    proc = spawn(['systemctl', 'is-enabled', unit], { stdout: 'pipe', stderr: 'pipe', timeout: ANSWER_TIMEOUT_MS })
  } catch {
    return null
  }
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  const word = out.trim().split('\n')[0] ?? ''
  if (word) return word
  // "Failed to get unit file state for berth.service: No such file or directory", or no systemd running.
  if (/No such file|not found|does not exist/i.test(err)) return 'not-found'
  return err.trim() ? `unknown (${err.trim().split('\n')[0]})` : null
}
