import { describe, expect, it } from 'vitest'
import { createPrivateKey, X509Certificate } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as x509 from '@peculiar/x509'
import { InvalidCsrError } from './errors'
import { certificateFingerprint, ClusterPki, CONTROL_CN, makeNodeKey } from './pki'

const dataDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-pki-'))
  return { dir, [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) }
}

describe('the cluster PKI', () => {
  it('makes both CAs and the control certificate once, every file 0600, and reads the same ones again', async () => {
    using d = dataDir()
    const [a, b] = await Promise.all([ClusterPki.open(d.dir), ClusterPki.open(d.dir)])
    expect(a.controlTls()).toEqual(b.controlTls())
    for (const name of ['node-ca.pem', 'node-ca.key', 'client-ca.pem', 'client-ca.key', 'control.pem', 'control.key']) {
      expect(statSync(join(d.dir, 'cluster', name)).mode & 0o777, name).toBe(0o600)
    }
    const again = await ClusterPki.open(d.dir)
    expect(again.controlTls()).toEqual(a.controlTls())
    const control = new X509Certificate(a.controlTls().cert)
    const clientCa = new X509Certificate(readFileSync(join(d.dir, 'cluster', 'client-ca.pem')))
    expect(control.subject).toBe(`CN=${CONTROL_CN}`)
    expect(control.verify(clientCa.publicKey)).toBe(true)
    // The control certificate is a client's: the node CA did not sign it.
    expect(control.verify(new X509Certificate(a.controlTls().nodeCa).publicKey)).toBe(false)
  })

  it('signs a node\'s request: CN its id, SAN its IP, a server certificate of the node CA, its fingerprint the DER\'s SHA-256', async () => {
    using d = dataDir()
    const pki = await ClusterPki.open(d.dir)
    const { keyPem, csrPem } = await makeNodeKey('worker-1')
    const signed = await pki.signNode(csrPem, 'node_0123456789ab', '10.0.0.2')
    const cert = new X509Certificate(signed.certificate)
    expect(cert.subject).toBe('CN=node_0123456789ab')
    expect(cert.subjectAltName).toBe('IP Address:10.0.0.2')
    expect(cert.verify(new X509Certificate(pki.controlTls().nodeCa).publicKey)).toBe(true)
    expect(cert.checkPrivateKey(createPrivateKey(keyPem))).toBe(true)
    expect(cert.serialNumber.toUpperCase()).toBe(signed.serial)
    expect(signed.fingerprint).toBe(cert.fingerprint256.replaceAll(':', '').toLowerCase())
    expect(certificateFingerprint(signed.certificate)).toBe(signed.fingerprint)
    const years = (Date.parse(cert.validTo) - Date.now()) / (365 * 24 * 3600_000)
    expect(years).toBeGreaterThan(1.9)
    expect(years).toBeLessThan(2.1)
    const eku = new x509.X509Certificate(signed.certificate).getExtension(x509.ExtendedKeyUsageExtension)
    expect(eku?.usages).toEqual([x509.ExtendedKeyUsage.serverAuth])
  })

  it('refuses a request that is not PEM, one signed by another key, and one for an RSA key', async () => {
    using d = dataDir()
    const pki = await ClusterPki.open(d.dir)
    await expect(pki.signNode('not a csr', 'node_x', '10.0.0.2')).rejects.toBeInstanceOf(InvalidCsrError)
    // A request whose public key was swapped after signing: its signature does not verify.
    const { csrPem } = await makeNodeKey('worker-1')
    const other = await makeNodeKey('worker-2')
    const forged = swapPublicKey(csrPem, other.csrPem)
    await expect(pki.signNode(forged, 'node_x', '10.0.0.2')).rejects.toThrow(/not signed by its own key/)
    const rsa = await crypto.subtle.generateKey({ name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, true, ['sign', 'verify'])
    const rsaCsr = await x509.Pkcs10CertificateRequestGenerator.create({ name: 'CN=x', keys: rsa, signingAlgorithm: { name: 'RSASSA-PKCS1-v1_5' } })
    await expect(pki.signNode(rsaCsr.toString('pem'), 'node_x', '10.0.0.2')).rejects.toThrow(/ECDSA P-256/)
  })
})

describe('the join listener\'s certificate (cluster/join.pem)', () => {
  /**
   * `count` processes open the PKI of `dir` at the same instant (each waits for a shared start
   * time), as berth serve and an admin command starting together would: what each then holds as
   * the join certificate (its fingerprint, and whether the key it read is the certificate's).
   */
  async function openTogether(dir: string, count: number): Promise<{ fingerprint: string; keyMatches: boolean }[]> {
    const startAt = Date.now() + 1500
    const script = [
      `import { ClusterPki } from ${JSON.stringify(join(import.meta.dirname, 'pki.ts'))}`,
      "import { createPrivateKey, X509Certificate } from 'node:crypto'",
      `await Bun.sleep(Math.max(0, ${startAt} - Date.now()))`,
      `const join = (await ClusterPki.open(${JSON.stringify(dir)})).joinTls()`,
      'console.log(JSON.stringify({ fingerprint: join.fingerprint, keyMatches: new X509Certificate(join.cert).checkPrivateKey(createPrivateKey(join.key)) }))',
    ].join('\n')
    const runs = Array.from({ length: count }, () => Bun.spawn([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'pipe' }))
    return Promise.all(runs.map(async (p) => {
      const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
      expect(code, err).toBe(0)
      return JSON.parse(out)
    }))
  }

  function onDisk(dir: string): { fingerprint: string; keyMatches: boolean } {
    const cert = readFileSync(join(dir, 'cluster', 'join.pem'), 'utf8')
    return { fingerprint: certificateFingerprint(cert), keyMatches: new X509Certificate(cert).checkPrivateKey(createPrivateKey(readFileSync(join(dir, 'cluster', 'join.key')))) }
  }

  it('is made once when processes start at once on a PKI that has none yet (one made before it existed): every one holds the files\' certificate and its key', async () => {
    using d = dataDir()
    await ClusterPki.open(d.dir)
    rmSync(join(d.dir, 'cluster', 'join.pem'))
    rmSync(join(d.dir, 'cluster', 'join.key'))
    const held = await openTogether(d.dir, 4)
    const files = onDisk(d.dir)
    expect(files.keyMatches).toBe(true)
    // What berth nodes token prints (the files') is what each process's join listener presents.
    expect(held).toEqual(held.map(() => files))
    expect(statSync(join(d.dir, 'cluster', 'join.key')).mode & 0o777).toBe(0o600)
  }, 30_000)

  it('is made once with the rest of the PKI when processes start at once on an empty data folder', async () => {
    using d = dataDir()
    const held = await openTogether(d.dir, 3)
    const files = onDisk(d.dir)
    expect(files.keyMatches).toBe(true)
    expect(held).toEqual(held.map(() => files))
  }, 30_000)
})

/** `csr` with the public key of `donor` in place of its own (same length for P-256), signature kept. */
function swapPublicKey(csr: string, donor: string): string {
  const a = Buffer.from(new x509.Pkcs10CertificateRequest(csr).rawData)
  const keyA = Buffer.from(new x509.Pkcs10CertificateRequest(csr).publicKey.rawData)
  const keyB = Buffer.from(new x509.Pkcs10CertificateRequest(donor).publicKey.rawData)
  const at = a.indexOf(keyA)
  keyB.copy(a, at)
  return `-----BEGIN CERTIFICATE REQUEST-----\n${a.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`
}
