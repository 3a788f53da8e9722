import { readFileSync } from 'node:fs'
import { defaultPage } from './default-page'
import { homeRepair, lineLogger } from './image-home'
import { makeTar, type TarEntry } from './tar'

/** Debian's busybox-static installs here. */
export const HOST_BUSYBOX = '/bin/busybox'

const SITE = { uid: 1000, gid: 1000 }

/**
 * MIME types busybox httpd does not know by itself (it knows html, css, txt, png, jpeg, gif and
 * a few more); without them a browser refuses module scripts and fonts.
 */
const HTTPD_CONF = `# busybox httpd configuration of berth/static (see busybox httpd --help).
.js:text/javascript
.mjs:text/javascript
.json:application/json
.svg:image/svg+xml
.webp:image/webp
.avif:image/avif
.ico:image/x-icon
.woff:font/woff
.woff2:font/woff2
.wasm:application/wasm
.xml:application/xml
.pdf:application/pdf
.mp4:video/mp4
.webm:video/webm
.txt:text/plain; charset=utf-8
.md:text/markdown; charset=utf-8
`

/**
 * Runs as the site user (the container's User). httpd -vv writes one line per request and one per
 * response status to stderr, which goes to ~/logs/error.log through a line logger that opens the
 * file for each line, so the log's rotation needs no signal (image-home.ts, lineLogger;
 * domain/logs/sources.ts keeps the failed ones). It logs a request's path without its query, so the access log, ~/logs/access.log,
 * is the edge's (domain/logs/access-log.ts).
 */
const START = `#!/bin/sh
${homeRepair(['error.log'])}${lineLogger('awk', '/tmp/berth-httpd.log', '/home/site/logs/error.log')}exec httpd -f -vv -p 8080 -h /home/site/public -c /etc/httpd.conf 2>/tmp/berth-httpd.log
`

const DOCKERFILE = `FROM scratch
ADD rootfs.tar /
ENV PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/site
USER 1000:1000
WORKDIR /home/site
EXPOSE 8080
CMD ["/usr/local/bin/berth-start"]
`

/**
 * The build context of berth/static: FROM scratch, a root filesystem of the host's static
 * busybox with every applet linked, a `site` user (uid/gid 1000, home /home/site) and the default
 * page. `applets` are busybox's own paths (`busybox --list-full`).
 */
export function staticContext(busybox: Uint8Array, applets: string[]): Uint8Array {
  const dirs = ['bin', 'sbin', 'usr', 'usr/bin', 'usr/sbin', 'usr/local', 'usr/local/bin', 'etc', 'home', 'root', 'var', 'proc', 'sys', 'dev', 'run']
  const rootfs: TarEntry[] = [
    ...dirs.map((path): TarEntry => ({ type: 'dir', path, mode: path === 'root' ? 0o700 : 0o755 })),
    { type: 'dir', path: 'tmp', mode: 0o1777 },
    { type: 'file', path: 'bin/busybox', data: busybox, mode: 0o755 },
    ...applets
      .filter((a) => /^(usr\/)?s?bin\/[^/]+$/.test(a) && a !== 'bin/busybox')
      .map((path): TarEntry => ({ type: 'symlink', path, target: '/bin/busybox' })),
    { type: 'file', path: 'etc/passwd', data: 'root:x:0:0:root:/root:/bin/sh\nsite:x:1000:1000:site:/home/site:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' },
    { type: 'file', path: 'etc/group', data: 'root:x:0:\nsite:x:1000:\nnogroup:x:65534:\n' },
    { type: 'file', path: 'etc/httpd.conf', data: HTTPD_CONF },
    { type: 'file', path: 'usr/local/bin/berth-start', data: START, mode: 0o755 },
    { type: 'dir', path: 'home/site', mode: 0o755, ...SITE },
    { type: 'dir', path: 'home/site/public', mode: 0o755, ...SITE },
    { type: 'dir', path: 'home/site/logs', mode: 0o755, ...SITE },
    { type: 'file', path: 'home/site/public/index.html', data: defaultPage(), mode: 0o644, ...SITE },
  ]
  return makeTar([
    { type: 'file', path: 'Dockerfile', data: DOCKERFILE },
    // ADD of a local tar extracts it with the owners and modes of its entries (COPY would make
    // the home root's).
    { type: 'file', path: 'rootfs.tar', data: makeTar(rootfs) },
  ])
}

/** The host's busybox and its applet list; throws when it is not a static build. */
export async function readHostBusybox(path = HOST_BUSYBOX): Promise<{ binary: Uint8Array; applets: string[] }> {
  let binary: Uint8Array
  try {
    binary = readFileSync(path)
  } catch {
    throw new Error(`${path} is missing; install it with: apt-get install busybox-static`)
  }
  if (!isStaticElf(binary)) throw new Error(`${path} is not statically linked and cannot run FROM scratch; install busybox-static instead of busybox.`)
  const proc = Bun.spawn([path, '--list-full'], { stdout: 'pipe', stderr: 'pipe' })
  const text = await new Response(proc.stdout).text()
  if ((await proc.exited) !== 0) throw new Error(`${path} --list-full failed`)
  return { binary, applets: text.split('\n').map((l) => l.trim()).filter(Boolean) }
}

/** True for a 64-bit little-endian ELF without a PT_INTERP program header (no dynamic loader). */
export function isStaticElf(bytes: Uint8Array): boolean {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (bytes.length < 64 || view.getUint32(0) !== 0x7f454c46 || bytes[4] !== 2 || bytes[5] !== 1) return false
  const phoff = Number(view.getBigUint64(0x20, true))
  const phentsize = view.getUint16(0x36, true)
  const phnum = view.getUint16(0x38, true)
  for (let i = 0; i < phnum; i++) {
    const at = phoff + i * phentsize
    if (at + 4 > bytes.length) return false
    if (view.getUint32(at, true) === 3) return false
  }
  return true
}
