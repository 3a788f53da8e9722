import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

/** One import of a file in one folder from a file in another: `file` imports `specifier`. */
export interface ImportArrow {
  file: string
  specifier: string
}

// `import ... from '...'`, `export ... from '...'`, `import '...'` and `import('...')`, type-only
// ones included: a type import is an arrow for the reader and for a cycle all the same.
const IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g

/**
 * Every relative import in the TypeScript files under `fromDir` (tests included) that resolves
 * into `toDir`; both folders are relative to `root`. The arrows between two areas of the domain,
 * to show a cycle and keep it broken.
 */
export function importArrows(root: string, fromDir: string, toDir: string): ImportArrow[] {
  const target = resolve(root, toDir)
  const arrows: ImportArrow[] = []
  for (const name of readdirSync(resolve(root, fromDir), { recursive: true }) as string[]) {
    if (!name.endsWith('.ts')) continue
    const file = join(resolve(root, fromDir), name)
    for (const [, specifier] of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const to = resolve(dirname(file), specifier!)
      if (to === target || to.startsWith(`${target}/`)) arrows.push({ file: relative(root, file), specifier: specifier! })
    }
  }
  return arrows
}
