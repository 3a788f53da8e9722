import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import ts from 'typescript'

/**
 * The facts src/architecture*.test.ts check, read off the syntax tree of every source file under
 * src/: each file's static imports and re-exports, dynamic import()s and require()s, its calls of
 * Bun's process, file and socket APIs, and its statements on the store's connection. The rules
 * themselves live in the tests; this is only the reading.
 */
export const SRC = resolve(import.meta.dirname, '../../src')

/**
 * What a file reaches outside the process with; `host`: the facts of the machine itself (its name, CPUs, memory: `node:os`).
 * A module is named without its `node:` prefix (`targetOf` drops it), so `node:fs` is `fs`.
 */
export type Io = 'files' | 'processes' | 'sockets' | 'docker' | 'host'

/** Modules whose value import is IO of a kind (a type-only import of them is not). */
export const IO_MODULES: Record<string, Io> = {
  fs: 'files', 'fs/promises': 'files', 'bun:sqlite': 'files',
  // Raw system calls (statx, openat2) on files.
  'bun:ffi': 'files',
  child_process: 'processes', worker_threads: 'processes',
  os: 'host',
  net: 'sockets', dgram: 'sockets', tls: 'sockets', http: 'sockets', https: 'sockets', http2: 'sockets',
  dns: 'sockets', 'dns/promises': 'sockets',
  dockerode: 'docker',
}

/** Globals that are IO: `Bun.spawn(...)`, `fetch(...)`, and the names `bun` exports for them. */
export const IO_GLOBALS: Record<string, Io> = {
  spawn: 'processes', spawnSync: 'processes', $: 'processes',
  file: 'files', write: 'files', mmap: 'files',
  serve: 'sockets', listen: 'sockets', connect: 'sockets', udpSocket: 'sockets', fetch: 'sockets',
  S3Client: 'sockets', s3: 'sockets',
  // A thread runs code beside the event loop: `new Worker(url)`, as a process would.
  Worker: 'processes',
}

export interface Import {
  /** A path under src/ without `.ts` (`domain/sites/service`), or a package name (`drizzle-orm`). */
  target: string
  /** False for `import type`, `export type`, `typeof import(...)` and imports of types only. */
  value: boolean
  line: number
}

export interface SourceFacts {
  /** Path under src/ without `.ts`. */
  file: string
  imports: Import[]
  /** Bun's IO APIs and fetch() it calls, by kind. */
  calls: { io: Io; what: string; line: number }[]
  /** Statements on the store's connection (`.sqlite.prepare`, `.db.select` ...). */
  tableAccess: { what: string; line: number }[]
}

/** Every non-test source file under src/, as paths under src/. */
export function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name)
    if (e.isDirectory()) return sources(path)
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && !e.name.endsWith('.d.ts') ? [relative(SRC, path)] : []
  })
}


/** Every file under src/, tests included, as paths under src/. */
export function allFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name)
    return e.isDirectory() ? allFiles(path) : [relative(SRC, path)]
  })
}

/** Lines as `wc -l` counts them: the newline characters. */
export const lineCount = (path: string) => readFileSync(join(SRC, path)).reduce((n, byte) => (byte === 0x0a ? n + 1 : n), 0)

/** A specifier as a target: a src path without `.ts`, or the package (node: prefix dropped). */
export function targetOf(fromFile: string, specifier: string): string {
  if (!specifier.startsWith('.')) return specifier.replace(/^node:/, '')
  const base = resolve(SRC, dirname(fromFile), specifier)
  const file = [`${base}.ts`, join(base, 'index.ts'), base].find((p) => p.endsWith('.ts') && existsSync(p)) ?? base
  return relative(SRC, file).replace(/\.ts$/, '')
}

/** True when an import or export clause names types only (`import type {...}`, `{ type A, type B }`). */
export function typeOnlyClause(node: ts.ImportDeclaration | ts.ExportDeclaration): boolean {
  if (ts.isImportDeclaration(node)) {
    const clause = node.importClause
    if (!clause) return false
    if (clause.isTypeOnly) return true
    const named = clause.namedBindings
    return !clause.name && named !== undefined && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly)
  }
  if (node.isTypeOnly) return true
  const named = node.exportClause
  return named !== undefined && ts.isNamedExports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly)
}

/** Reads a file's imports, IO calls and table statements off its syntax tree. */
export function factsOf(path: string, text = readFileSync(join(SRC, path), 'utf8')): SourceFacts {
  const file = path.replace(/\.ts$/, '')
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true)
  const facts: SourceFacts = { file, imports: [], calls: [], tableAccess: [] }
  const lineOf = (node: ts.Node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const target = targetOf(path, node.moduleSpecifier.text)
      const value = !typeOnlyClause(node)
      facts.imports.push({ target, value, line: lineOf(node) })
      // `import { spawn } from 'bun'` is Bun.spawn by another name.
      const named = ts.isImportDeclaration(node) ? node.importClause?.namedBindings : undefined
      if (target === 'bun' && value && named && ts.isNamedImports(named)) {
        for (const e of named.elements) {
          const io = IO_GLOBALS[(e.propertyName ?? e.name).text]
          if (io && !e.isTypeOnly) facts.calls.push({ io, what: `${(e.propertyName ?? e.name).text} from 'bun'`, line: lineOf(e) })
        }
      }
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      facts.imports.push({ target: targetOf(path, node.argument.literal.text), value: false, line: lineOf(node) })
    } else if (ts.isCallExpression(node)) {
      const [arg] = node.arguments
      const literal = arg && ts.isStringLiteralLike(arg) ? arg.text : null
      if (node.expression.kind === ts.SyntaxKind.ImportKeyword) {
        facts.imports.push({ target: literal === null ? '<computed>' : targetOf(path, literal), value: true, line: lineOf(node) })
      } else if (ts.isIdentifier(node.expression) && node.expression.text === 'require') {
        facts.imports.push({ target: literal === null ? '<computed>' : targetOf(path, literal), value: true, line: lineOf(node) })
      } else if (ts.isIdentifier(node.expression) && node.expression.text === 'fetch') {
        facts.calls.push({ io: 'sockets', what: 'fetch()', line: lineOf(node) })
      }
    } else if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'Worker') {
      facts.calls.push({ io: 'processes', what: 'new Worker()', line: lineOf(node) })
    } else if (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression)) {
      const io = IO_GLOBALS[node.name.text]
      if (node.expression.text === 'Bun' && io) facts.calls.push({ io, what: `Bun.${node.name.text}`, line: lineOf(node) })
    }
    if (ts.isPropertyAccessExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      // store.sqlite.prepare(...), store.db.select(...): statements on the store's connection.
      const [conn, verb] = [node.expression.name.text, node.name.text]
      if ((conn === 'sqlite' && /^(prepare|query|run|exec)$/.test(verb)) || (conn === 'db' && /^(select|selectDistinct|insert|update|delete)$/.test(verb))) {
        facts.tableAccess.push({ what: `.${conn}.${verb}`, line: lineOf(node) })
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return facts
}

