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

/** `csr` with the public key of `donor` in place of its own (same length for P-256), signature kept. */
function swapPublicKey(csr: string, donor: string): string {
  const a = Buffer.from(new x509.Pkcs10CertificateRequest(csr).rawData)
  const keyA = Buffer.from(new x509.Pkcs10CertificateRequest(csr).publicKey.rawData)
  const keyB = Buffer.from(new x509.Pkcs10CertificateRequest(donor).publicKey.rawData)
  const at = a.indexOf(keyA)
  keyB.copy(a, at)
  return `-----BEGIN CERTIFICATE REQUEST-----\n${a.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`
}
