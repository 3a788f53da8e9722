import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * The rule of docs/architecture.md, "The AI modules and sites' files": nothing under src/modules
 * reaches the filesystem but through the SiteFiles reader its deps hand it. Checked on the sources
 * (tests aside) and on everything they import as values, transitively: no filesystem module
 * (fs, node:fs, fs/promises, node:fs/promises), no bun:ffi (raw system calls), no child process,
 * no SQLite database opened (bun:sqlite as a value), no require() or import(), and no Bun file or
 * process API (Bun.file, Bun.write, Bun.spawn, Bun.$, Bun.mmap, Bun.Glob...). From
 * src/drivers/files only types may be imported: the reader itself arrives through deps.
 *
 * One exception, by name: store/private-database.ts, which opens the chatbot's own index file in
 * Berth's data folder (never a site's file).
 */
const MODULES = resolve(import.meta.dirname)
const SRC = resolve(MODULES, '..')
const ALLOWED = new Set([join(SRC, 'store/private-database.ts')])
const FORBIDDEN_SPECIFIERS = /^(node:)?(fs|fs\/promises|child_process|module|worker_threads)$|^bun:(ffi|sqlite)$|^bun$/
const FORBIDDEN_CODE: [RegExp, string][] = [
  [/\bBun\s*\.\s*(?!hash\b|CryptoHasher\b|escapeHTML\b|sleep\b|nanoseconds\b|deepEquals\b)\w+|\bBun\s*\[/, 'a Bun API other than hashing, escaping, sleeping and timing'],
  [/\brequire\s*\(/, 'require()'],
  [/\bimport\s*\(/, 'a dynamic import()'],
  [/\bprocess\s*\.\s*(binding|dlopen)\b/, 'process.binding or process.dlopen'],
]

/** Every non-test source file under src/modules. */
function moduleSources(dir = MODULES): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name)
    if (e.isDirectory()) return moduleSources(path)
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : []
  })
}

interface Import {
  specifier: string
  /** False for `import type`, `export type` and imports whose every name is `type X`. */
  value: boolean
}

/** The imports and re-exports of a source file (static ones; dynamic ones are refused anyway). */
function importsOf(source: string): Import[] {
  const found: Import[] = []
  const statement = /^\s*(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]/gm
  for (const m of source.matchAll(statement)) {
    if (m[5] !== undefined) {
      found.push({ specifier: m[5], value: true })
      continue
    }
    const clause = m[3]!
    const names = /\{([^}]*)\}/.exec(clause)
    const outsideBraces = clause.replace(/\{[^}]*\}/, '').replace(/,/g, '').trim()
    const allTypes = names !== null && outsideBraces === '' && names[1]!.split(',').map((n) => n.trim()).filter(Boolean).every((n) => n.startsWith('type '))
    found.push({ specifier: m[4]!, value: m[2] === undefined && !allTypes })
  }
  return found
}

function resolveLocal(from: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null
  const base = resolve(dirname(from), specifier)
  for (const candidate of [base, `${base}.ts`, join(base, 'index.ts')]) if (candidate.endsWith('.ts') && existsSync(candidate)) return candidate
  return null
}

/** What each file reachable from src/modules by value imports does that breaks the rule. */
function violations(): string[] {
  const problems: string[] = []
  const seen = new Set<string>()
  const queue = moduleSources().map((file) => ({ file, via: [] as string[] }))
  while (queue.length > 0) {
    const { file, via } = queue.shift()!
    if (seen.has(file) || ALLOWED.has(file)) continue
    seen.add(file)
    const name = relative(SRC, file)
    const where = via.length ? `${name} (imported by ${via.join(' <- ')})` : name
    const source = readFileSync(file, 'utf8')
    const code = source.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, '')
    for (const { specifier, value } of importsOf(code)) {
      if (!value) continue
      if (FORBIDDEN_SPECIFIERS.test(specifier)) problems.push(`${where} imports '${specifier}'`)
      const target = resolveLocal(file, specifier)
      if (target === null) continue
      if (target.startsWith(join(SRC, 'drivers', 'files'))) problems.push(`${where} imports values from ${relative(SRC, target)}; only its types may be imported (the reader comes through deps)`)
      else queue.push({ file: target, via: [name, ...via].slice(0, 4) })
    }
    for (const [pattern, what] of FORBIDDEN_CODE) if (pattern.test(code)) problems.push(`${where} uses ${what}`)
  }
  return problems
}

describe('src/modules reaches sites\' files only through the SiteFiles reader', () => {
  it('no module source, nor anything it imports, touches the filesystem itself', () => {
    expect(moduleSources().length).toBeGreaterThan(10)
    expect(violations()).toEqual([])
  })

  it('the check sees what it must refuse', () => {
    expect(importsOf("import { readFile } from 'node:fs/promises'")).toEqual([{ specifier: 'node:fs/promises', value: true }])
    expect(importsOf("import type { Stats } from 'node:fs'")).toEqual([{ specifier: 'node:fs', value: false }])
    expect(importsOf("import { type SiteReader, type SiteFiles } from '../drivers/files/site-reader'")[0]!.value).toBe(false)
    expect(importsOf("import { type SiteReader, HomeReader } from '../drivers/files/site-reader'")[0]!.value).toBe(true)
    expect(importsOf("import * as fs from 'fs'")).toEqual([{ specifier: 'fs', value: true }])
    expect(importsOf("export { readFileSync } from 'node:fs'")).toEqual([{ specifier: 'node:fs', value: true }])
    expect(importsOf("import 'node:fs'")).toEqual([{ specifier: 'node:fs', value: true }])
    expect(importsOf("import fs, { open } from 'node:fs'")[0]!.value).toBe(true)
    for (const specifier of ['fs', 'node:fs', 'fs/promises', 'node:fs/promises', 'bun:ffi', 'bun:sqlite', 'node:child_process', 'bun']) expect(FORBIDDEN_SPECIFIERS.test(specifier)).toBe(true)
    for (const specifier of ['node:path', 'node:crypto', 'node:zlib', 'drizzle-orm', 'elysia']) expect(FORBIDDEN_SPECIFIERS.test(specifier)).toBe(false)
    const uses = (code: string) => FORBIDDEN_CODE.filter(([p]) => p.test(code)).map(([, what]) => what)
    expect(uses('await Bun.file(path).text()')).toHaveLength(1)
    expect(uses('await Bun.write(path, data)')).toHaveLength(1)
    expect(uses("Bun['file'](path)")).toHaveLength(1)
    expect(uses('Bun.spawn(["cat", path])')).toHaveLength(1)
    expect(uses('const fs = require("fs")')).toHaveLength(1)
    expect(uses('await import("node:fs")')).toHaveLength(1)
    expect(uses('Bun.hash(body)')).toEqual([])
  })
})
