import { execFileSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

/** A file of a tree a test deploys: its text, or its text and mode. */
export type TreeFile = string | { content: string; mode: number }

/** Writes `files` into a fresh folder and returns it (the caller removes it, or `withTree` does). */
export function writeTree(files: Record<string, TreeFile>): string {
  const dir = mkdtempSync(join(tmpdir(), 'berth-tree-'))
  for (const [path, file] of Object.entries(files)) {
    const at = join(dir, path)
    mkdirSync(dirname(at), { recursive: true })
    writeFileSync(at, typeof file === 'string' ? file : file.content)
    if (typeof file !== 'string') chmodSync(at, file.mode)
  }
  return dir
}

/** The tree as a tar.gz (made by GNU tar, members under ./), as an agent would send it. */
export function tarGz(files: Record<string, TreeFile>): Uint8Array {
  const dir = writeTree(files)
  try {
    return new Uint8Array(execFileSync('tar', ['-czf', '-', '-C', dir, '.'], { maxBuffer: 256 * 1024 * 1024 }))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The tree as a zip (Python's zipfile), under one top folder as GitHub's archives are. */
export function zipOf(files: Record<string, TreeFile>, top = 'app-main'): Uint8Array {
  const dir = writeTree(files)
  const out = join(dir, '..', `${dir.split('/').pop()}.zip`)
  try {
    execFileSync('python3', ['-c', `import os, sys, zipfile
src, out, top = sys.argv[1:4]
with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:
    for root, _, names in os.walk(src):
        for n in names:
            p = os.path.join(root, n)
            z.write(p, os.path.join(top, os.path.relpath(p, src)))`, dir, out, top])
    return new Uint8Array(readFileSync(out))
  } finally {
    rmSync(dir, { recursive: true, force: true })
    rmSync(out, { force: true })
  }
}
