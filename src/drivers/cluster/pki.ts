import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import * as x509 from '@peculiar/x509'
import { writePrivateFile } from '../../lib/private-file'
import { InvalidCsrError } from './errors'
import type { ControlTls } from './types'

/** ECDSA P-256 with SHA-256: every key and signature of the cluster's PKI. */
const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' } as const
const SIGNING = { name: 'ECDSA', hash: 'SHA-256' } as const
const DAY_MS = 24 * 3600 * 1000
const CA_DAYS = 3650
const NODE_DAYS = 730
/** The Common Name of the control plane's client certificate. */
export const CONTROL_CN = 'berth-control'

/** A node's certificate as signed at its join. */
export interface SignedNode {
  /** PEM. */
  certificate: string
  /** Hex, upper case. */
  serial: string
  /** SHA-256 of the certificate's DER, lower-case hex: what `nodes.cert_fingerprint` keeps. */
  fingerprint: string
}

/** SHA-256 of a certificate's DER (PEM or DER given), lower-case hex without colons. */
export function certificateFingerprint(cert: string | Uint8Array): string {
  const der = typeof cert === 'string' ? new Uint8Array(new x509.X509Certificate(cert).rawData) : cert
  return createHash('sha256').update(der).digest('hex')
}

/** The colon-separated, any-case form Node's `fingerprint256` uses, as certificateFingerprint's. */
export function normalizeFingerprint(fingerprint: string): string {
  return fingerprint.replaceAll(':', '').toLowerCase()
}

/**
 * The cluster's two CAs and the control plane's client certificate (drivers/cluster/types.ts),
 * kept in `{dataDir}/cluster/` as PEM, each key 0600: node-ca.{pem,key} signs the nodes' server
 * certificates at their join; client-ca.{pem,key} signed control.{pem,key}, the only client an
 * agent accepts. Made once, on the first `open`; later opens read them.
 *
 * @example
 * const pki = await ClusterPki.open('/var/lib/berth')
 * const signed = await pki.signNode(csrPem, 'node_x1', '10.0.0.2')
 */
/**
 * What the control plane presents to the agents, read from the data folder without making
 * anything: null when `berth serve` has not made the cluster's PKI yet (ClusterPki.open does).
 * For the admin's commands, which run beside `berth serve` and only reach the nodes.
 */
export function readControlTls(dataDir: string): ControlTls | null {
  const dir = join(dataDir, 'cluster')
  if (!existsSync(join(dir, 'control.pem'))) return null
  const read = (name: string) => readFileSync(join(dir, name), 'utf8')
  return { nodeCa: read('node-ca.pem'), cert: read('control.pem'), key: read('control.key') }
}

/**
 * The join listener's certificate (`{dataDir}/cluster/join.pem`, its key join.key): self-signed,
 * ECDSA P-256, made once by `berth serve` (ClusterPki.open). Nodes do not check it against a CA:
 * `berth nodes token` prints its SHA-256 and `berth node join --fingerprint` pins it, so a node
 * sends its token only to the control plane that holds this key, and trusts only its answer.
 */
export interface JoinTls {
  cert: string
  key: string
  /** SHA-256 of the certificate's DER, lower-case hex. */
  fingerprint: string
}

/** The join listener's certificate of the data folder, or null before berth serve made it. */
export function readJoinTls(dataDir: string): JoinTls | null {
  const dir = join(dataDir, 'cluster')
  if (!existsSync(join(dir, 'join.pem'))) return null
  const cert = readFileSync(join(dir, 'join.pem'), 'utf8')
  return { cert, key: readFileSync(join(dir, 'join.key'), 'utf8'), fingerprint: certificateFingerprint(cert) }
}

/**
 * The join listener's certificate and its key, join.key first and join.pem last (each written
 * whole): join.pem's presence says both are there. Run under the PKI's lock (madeOnce).
 */
async function makeJoinCert(dir: string): Promise<void> {
  const keys = (await crypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair
  const now = Date.now()
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: 'CN=Berth cluster join',
    notBefore: new Date(now - 3600_000),
    notAfter: new Date(now + CA_DAYS * DAY_MS),
    signingAlgorithm: SIGNING,
    keys,
    extensions: [
      // Its own trust anchor: the joining node gives it to TLS as the only CA, once its pin matched.
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyCertSign, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
    ],
  })
  writePrivateFile(join(dir, 'join.key'), await exportPrivateKey(keys.privateKey))
  writePrivateFile(join(dir, 'join.pem'), cert.toString('pem'))
}

export class ClusterPki {
  private constructor(
    readonly dir: string,
    private readonly nodeCa: { cert: x509.X509Certificate; pem: string; key: CryptoKey },
    readonly clientCaPem: string,
    private readonly control: { cert: string; key: string },
  ) {}

  /** Reads the PKI of the data folder, making it first when there is none. */
  static async open(dataDir: string): Promise<ClusterPki> {
    const dir = join(dataDir, 'cluster')
    await madeOnce(dir, 'control.pem', makePki)
    // A PKI made before the join listener had none: made now, under the same lock.
    await madeOnce(dir, 'join.pem', makeJoinCert)
    const read = (name: string) => readFileSync(join(dir, name), 'utf8')
    const nodeCaPem = read('node-ca.pem')
    const nodeCaKey = await importPrivateKey(read('node-ca.key'))
    return new ClusterPki(dir, { cert: new x509.X509Certificate(nodeCaPem), pem: nodeCaPem, key: nodeCaKey }, read('client-ca.pem'), {
      cert: read('control.pem'),
      key: read('control.key'),
    })
  }

  /** The join listener's certificate and key, and the fingerprint nodes pin. */
  joinTls(): JoinTls {
    return readJoinTls(join(this.dir, '..'))!
  }

  /** What the control plane presents to the agents and checks them with (NodeLink). */
  controlTls(): ControlTls {
    return { nodeCa: this.nodeCa.pem, cert: this.control.cert, key: this.control.key }
  }

  /**
   * Signs a joining node's certificate request: CN = its id, SAN = its IP address, server use
   * only, NODE_DAYS valid. Throws InvalidCsrError when the request is not a PEM PKCS#10 request
   * for an ECDSA P-256 key signed by that key.
   */
  async signNode(csrPem: string, nodeId: string, address: string): Promise<SignedNode> {
    const csr = await parseCsr(csrPem)
    const now = Date.now()
    const serial = randomSerial()
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial,
      subject: `CN=${nodeId}`,
      issuer: this.nodeCa.cert.subject,
      notBefore: new Date(now - 3600_000),
      notAfter: new Date(now + NODE_DAYS * DAY_MS),
      signingAlgorithm: SIGNING,
      publicKey: csr.publicKey,
      signingKey: this.nodeCa.key,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyAgreement, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([{ type: 'ip', value: address }]),
        await x509.AuthorityKeyIdentifierExtension.create(this.nodeCa.cert.publicKey),
      ],
    })
    return { certificate: cert.toString('pem'), serial: serial.toUpperCase(), fingerprint: certificateFingerprint(new Uint8Array(cert.rawData)) }
  }
}

/** A node's key and its certificate request, made on the node by `berth node join` (the key stays there). */
export async function makeNodeKey(name: string): Promise<{ keyPem: string; csrPem: string }> {
  const keys = (await crypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({ name: `CN=${cnSafe(name)}`, keys, signingAlgorithm: SIGNING })
  return { keyPem: await exportPrivateKey(keys.privateKey), csrPem: csr.toString('pem') }
}

async function parseCsr(pem: string): Promise<x509.Pkcs10CertificateRequest> {
  let csr: x509.Pkcs10CertificateRequest
  try {
    csr = new x509.Pkcs10CertificateRequest(pem)
  } catch {
    throw new InvalidCsrError('csr is not a PEM certificate request (-----BEGIN CERTIFICATE REQUEST-----)')
  }
  const algorithm = csr.publicKey.algorithm as EcKeyAlgorithm
  if (algorithm.name !== 'ECDSA' || algorithm.namedCurve !== 'P-256') throw new InvalidCsrError('csr must be for an ECDSA P-256 key, as berth node join makes')
  let signed = false
  try {
    signed = await csr.verify()
  } catch {
    signed = false
  }
  if (!signed) throw new InvalidCsrError('csr is not signed by its own key')
  return csr
}

/**
 * Runs `make` in `dir` unless its last file, `done`, is there. Concurrent callers (two processes
 * at the first start, or berth serve and an admin command) are kept apart by one lock file made
 * with O_EXCL: the one that took it makes the files (`done` last), the others wait for `done` and
 * read what it made, so every process holds the same certificates. A lock older than a minute was
 * left by a crash and is taken over.
 */
async function madeOnce(dir: string, done: string, make: (dir: string) => Promise<void>): Promise<void> {
  const last = join(dir, done)
  if (existsSync(last)) return
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const lock = join(dir, '.pki.lock')
  for (let waited = 0; ; waited += 50) {
    if (existsSync(last)) return
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx', mode: 0o600 })
      break
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      if (staleLock(lock)) rmSync(lock, { force: true })
      if (waited > 30_000) throw new Error(`${lock} is held by another process that made no ${done} in 30 s; remove it if no berth runs`)
      await Bun.sleep(50)
    }
  }
  try {
    if (!existsSync(last)) await make(dir)
  } finally {
    rmSync(lock, { force: true })
  }
}

function staleLock(lock: string): boolean {
  try {
    return Date.now() - statSync(lock).mtimeMs > 60_000
  } catch {
    return false
  }
}

async function makePki(dir: string): Promise<void> {
  const nodeCa = await makeCa('Berth cluster node CA')
  const clientCa = await makeCa('Berth cluster client CA')
  const control = (await crypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair
  const now = Date.now()
  const controlCert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: `CN=${CONTROL_CN}`,
    issuer: clientCa.cert.subject,
    notBefore: new Date(now - 3600_000),
    notAfter: new Date(now + CA_DAYS * DAY_MS),
    signingAlgorithm: SIGNING,
    publicKey: control.publicKey,
    signingKey: clientCa.keys.privateKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyAgreement, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
      await x509.AuthorityKeyIdentifierExtension.create(clientCa.cert.publicKey),
    ],
  })
  writePrivateFile(join(dir, 'node-ca.key'), await exportPrivateKey(nodeCa.keys.privateKey))
  writePrivateFile(join(dir, 'node-ca.pem'), nodeCa.cert.toString('pem'))
  writePrivateFile(join(dir, 'client-ca.key'), await exportPrivateKey(clientCa.keys.privateKey))
  writePrivateFile(join(dir, 'client-ca.pem'), clientCa.cert.toString('pem'))
  writePrivateFile(join(dir, 'control.key'), await exportPrivateKey(control.privateKey))
  writePrivateFile(join(dir, 'control.pem'), controlCert.toString('pem'))
}

async function makeCa(name: string): Promise<{ cert: x509.X509Certificate; keys: CryptoKeyPair }> {
  const keys = (await crypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair
  const now = Date.now()
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: `CN=${name}`,
    notBefore: new Date(now - 3600_000),
    notAfter: new Date(now + CA_DAYS * DAY_MS),
    signingAlgorithm: SIGNING,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  })
  return { cert, keys }
}

/** 16 random bytes, the first bit clear (a positive INTEGER, RFC 5280 4.1.2.2), as hex. */
function randomSerial(): string {
  const bytes = randomBytes(16)
  bytes[0]! &= 0x7f
  bytes[0]! |= 0x01
  return bytes.toString('hex')
}

async function exportPrivateKey(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await crypto.subtle.exportKey('pkcs8', key))
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END PRIVATE KEY-----\n`
}

async function importPrivateKey(pem: string): Promise<CryptoKey> {
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64')
  return crypto.subtle.importKey('pkcs8', der, KEY_ALGORITHM, false, ['sign'])
}

/** A host name as a Common Name: printable, no DN separators, at most 64 characters. */
function cnSafe(name: string): string {
  return name.replace(/[^A-Za-z0-9.-]/g, '-').slice(0, 64) || 'node'
}
