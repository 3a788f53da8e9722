import { execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { TarWriter, type WrittenKind } from '../../src/drivers/sources/tar-writer'

/**
 * Archives made the way an attacker would (issue 39, "Hostile trees"), for the sources' driver
 * test (src/drivers/sources/archive.test.ts) and the end-to-end one (test/apps-hostile.e2e.test.ts):
 * GNU tar over a real tree (real links, devices and FIFOs: mknod needs root), a tar written header
 * by header (names as given, nothing cleaned) and Python's zipfile (unix modes, sizes that lie).
 * Each builder writes a new file under `dir` and returns its path.
 */
export type Crafted = [name: string, kind: WrittenKind | 'fifo' | 'char', content?: string]

export interface HostileArchives {
  /** A tree on disk made by `make`, archived by GNU tar (gzip) with `args` naming what goes in. */
  gnuTar(make: (root: string) => void, args?: string[], extra?: string[]): string
  /** A tar written header by header (names as given, nothing cleaned), gzipped. */
  craftedTar(members: Crafted[]): Promise<string>
  /** A zip written by Python's zipfile: [name, data, unix mode (0: none)]; `lie` rewrites each member's declared size. */
  pyZip(members: [name: string, data: string | { zeros: number }, mode?: number][], lie?: number): string
  /** A fresh path under `dir` named from `stem`. */
  fresh(stem: string): string
}

export function hostileArchives(dir: string): HostileArchives {
  let n = 0
  const fresh = (stem: string) => join(dir, `${stem}${n++}`)
  return {
    fresh,
    gnuTar(make, args = ['.'], extra = []) {
      const root = fresh('t')
      mkdirSync(root, { recursive: true })
      make(root)
      const out = `${root}.tar.gz`
      execFileSync('tar', ['-czf', out, ...extra, '-C', root, ...args])
      return out
    },
    async craftedTar(members) {
      const out = `${fresh('c')}.tar`
      const handle = await open(out, 'w')
      const w = new TarWriter(handle)
      for (const [name, kind, content = ''] of members) {
        if (kind === 'fifo' || kind === 'char') {
          await w.header(name, 'file', 0o644, 0)
          continue
        }
        const data = kind === 'file' ? Buffer.from(content) : Buffer.alloc(0)
        await w.header(name, kind, 0o644, data.length, kind === 'file' || kind === 'folder' ? '' : content)
        if (data.length) await w.data(data)
        await w.endData(data.length)
      }
      await w.end()
      await handle.close()
      writeFileSync(`${out}.gz`, gzipSync(readFileSync(out)))
      return `${out}.gz`
    },
    pyZip(members, lie) {
      const out = `${fresh('z')}.zip`
      const script = `
import json, struct, sys, zipfile
out, members, lie = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:
    for name, data, mode in members:
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED
        if mode:
            info.create_system = 3
            info.external_attr = mode << 16
        if isinstance(data, dict):
            with z.open(info, 'w', force_zip64=data['zeros'] > 2**31) as f:
                left = data['zeros']
                while left > 0:
                    k = min(left, 1 << 24); f.write(bytes(k)); left -= k
        else:
            z.writestr(info, data.encode())
if lie is not None:
    b = bytearray(open(out, 'rb').read())
    i = 0
    while True:
        i = b.find(b'PK\\x01\\x02', i)
        if i < 0: break
        struct.pack_into('<I', b, i + 24, lie); i += 4
    i = 0
    while True:
        i = b.find(b'PK\\x03\\x04', i)
        if i < 0: break
        struct.pack_into('<I', b, i + 22, lie); i += 4
    open(out, 'wb').write(b)
`
      execFileSync('python3', ['-c', script, out, JSON.stringify(members.map(([a, b, c = 0]) => [a, b, c])), JSON.stringify(lie ?? null)])
      return out
    },
  }
}
