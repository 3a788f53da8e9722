import { spawn, spawnSync, type Subprocess } from 'bun'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent } from 'node:https'
import { freePort } from './binary'

/**
 * Let's Encrypt's test CA, Pebble (Debian package `pebble`), started for one test file: its ACME
 * directory on HTTPS with a certificate made here (`caBundle` trusts it), HTTP-01 checked on
 * `httpPort` of 127.0.0.1 and names resolved through `dnsServer` (Berth's own DNS in the tests).
 * `rootPem()` is the root that signs what it issues (it changes with every start).
 */
export interface Pebble {
  directoryUrl: string
  caBundle: string
  caBundleFile: string
  rootPem(): Promise<string>
  stop(): Promise<void>
}

export async function startPebble(opts: { httpPort: number; dnsServer: string; validitySeconds?: number; env?: Record<string, string> }): Promise<Pebble> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-pebble-'))
  const key = join(dir, 'key.pem')
  const cert = join(dir, 'cert.pem')
  const made = spawnSync(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2', '-subj', '/CN=pebble test directory',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', key, '-out', cert])
  if (made.exitCode !== 0) throw new Error(`openssl: ${made.stderr.toString()}`)
  const [port, management] = [await freePort(), await freePort()]
  writeFileSync(join(dir, 'pebble.json'), JSON.stringify({
    pebble: { listenAddress: `127.0.0.1:${port}`, managementListenAddress: `127.0.0.1:${management}`, certificate: cert, privateKey: key, httpPort: opts.httpPort, tlsPort: await freePort(), ocspResponderURL: '', externalAccountBindingRequired: false, ...(opts.validitySeconds ? { certificateValidityPeriod: opts.validitySeconds } : {}) },
  }))
  let log = ''
  const proc: Subprocess = spawn(['pebble', '-config', join(dir, 'pebble.json'), '-dnsserver', opts.dnsServer], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', ...opts.env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  void (async () => {
    const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
    for (let r = await reader.read(); !r.done; r = await reader.read()) log += new TextDecoder().decode(r.value)
  })()
  const caBundle = readFileSync(cert, 'utf8')
  const agent = new Agent({ ca: caBundle })
  const get = (url: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      import('node:https').then(({ get: httpsGet }) => {
        httpsGet(url, { agent }, (res) => {
          let body = ''
          res.on('data', (d) => (body += d))
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
        }).on('error', reject)
      }, reject)
    })
  const directoryUrl = `https://127.0.0.1:${port}/dir`
  for (let i = 0; ; i++) {
    if ((await get(directoryUrl).catch(() => ({ status: 0 }))).status === 200) break
    if (i > 200 || proc.exitCode !== null) throw new Error(`pebble did not start: ${log}`)
    await Bun.sleep(50)
  }
  return {
    directoryUrl,
    caBundle,
    caBundleFile: cert,
    async rootPem() {
      const res = await get(`https://127.0.0.1:${management}/roots/0`)
      if (res.status !== 200) throw new Error(`pebble roots: ${res.status}`)
      return res.body
    },
    async stop() {
      proc.kill()
      await proc.exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
