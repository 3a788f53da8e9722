import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

/**
 * The rules of docs/architecture.md ("The rules"), checked on the import graph of every source
 * file under src/ (tests aside): each file is parsed with the TypeScript compiler, and its static
 * imports and re-exports, dynamic import()s and require()s, and its calls of Bun's process, file
 * and socket APIs are read off the syntax tree. A rule is a row of the tables below; a broken
 * rule names the file, the line and the rule.
 */
const SRC = resolve(import.meta.dirname)

/** What a file reaches outside the process with. */
type Io = 'files' | 'processes' | 'sockets' | 'docker'

/** Modules whose value import is IO of a kind (a type-only import of them is not). */
const IO_MODULES: Record<string, Io> = {
  fs: 'files', 'fs/promises': 'files', 'bun:sqlite': 'files',
  // Raw system calls (statx, openat2) on files.
  'bun:ffi': 'files',
  child_process: 'processes',
  net: 'sockets', dgram: 'sockets', tls: 'sockets', http: 'sockets', https: 'sockets', http2: 'sockets',
  dockerode: 'docker',
}

/** Globals that are IO: `Bun.spawn(...)`, `fetch(...)`, and the names `bun` exports for them. */
const IO_GLOBALS: Record<string, Io> = {
  spawn: 'processes', spawnSync: 'processes', $: 'processes',
  file: 'files', write: 'files', mmap: 'files',
  serve: 'sockets', listen: 'sockets', connect: 'sockets', udpSocket: 'sockets', fetch: 'sockets',
}

const ALL_IO: Io[] = ['files', 'processes', 'sockets', 'docker']

/**
 * Where each kind of IO may be written. Everything else (src/domain, src/api, src/modules,
 * src/jobs, src/compose/ ...) reaches the outside only through a driver it is handed.
 * A file takes the longest matching prefix.
 */
const IO_ALLOWED: [prefix: string, kinds: Io[], why: string][] = [
  ['drivers/runtime/', ALL_IO, 'the container runtime: the only code that talks to Docker'],
  ['drivers/', ['files', 'processes', 'sockets'], 'the drivers: every outside system behind an interface'],
  ['store/', ['files'], 'the SQLite store and the chatbot\'s private index files, in Berth\'s data folder'],
  ['cli/', ['files', 'processes'], 'the command line: reads the config, checks the host, runs systemctl'],
  ['install/', ['files'], 'berth install: writes the unit, the config and the sysctl file'],
  ['config/', ['files'], 'reads the config file, once, into a typed object'],
  ['server.ts', ['sockets'], 'the API listener (plain HTTP; the edge and MCP answer through it)'],
  ['admin/', ['sockets', 'files'], 'the admin API on its root-only Unix socket (berth serve) and its client (the admin commands)'],
  ['edge/', ['sockets'], 'the edge: its listeners and its HTTP/1.1 client to the sites\' containers'],
  ['edge/https.ts', ['sockets', 'files'], 'the HTTPS listener; it sets net.ipv4.tcp_migrate_req in /proc'],
  ['dns/server.ts', ['sockets'], 'the DNS listener (UDP and TCP)'],
  ['lib/private-file.ts', ['files'], 'writes secrets 0600 (the store, drivers and cli use it)'],
  ['lib/ports.ts', ['sockets'], 'a probe bind: is a host port free'],
]

/** A driver's contract files: what other layers may import from a driver as values. */
const isDriverContract = (file: string) => /^drivers\/[^/]+\/(types|errors)$/.test(file)
const isConcreteDriver = (file: string) => file.startsWith('drivers/') && !isDriverContract(file)
/** Repositories: the only code outside src/store that reads or writes the store's tables. */
const isRepository = (file: string) => /(^|\/)(repository|[\w-]+-repository)$/.test(file) || file.includes('/repositories/')

interface Import {
  /** A path under src/ without `.ts` (`domain/sites/service`), or a package name (`drizzle-orm`). */
  target: string
  /** False for `import type`, `export type`, `typeof import(...)` and imports of types only. */
  value: boolean
  line: number
}

interface SourceFacts {
  /** Path under src/ without `.ts`. */
  file: string
  imports: Import[]
  /** Bun's IO APIs and fetch() it calls, by kind. */
  calls: { io: Io; what: string; line: number }[]
  /** Statements on the store's connection (`.sqlite.prepare`, `.db.select` ...). */
  tableAccess: { what: string; line: number }[]
}

/**
 * The layer rules on imports: files matching `from` may not import what `forbids` matches.
 * `values` rules look at value imports only: a type describes a contract and costs nothing at
 * run time; the value import is what ties a layer to an implementation.
 */
interface ImportRule {
  name: string
  from: (file: string) => boolean
  forbids: (target: string) => boolean
  values: boolean
}

const inDomain = (f: string) => f.startsWith('domain/')
const isDrizzle = (t: string) => t === 'drizzle-orm' || t.startsWith('drizzle-orm/')

const IMPORT_RULES: ImportRule[] = [
  { name: 'src/domain imports nothing from elysia', from: inDomain, forbids: (t) => t === 'elysia' || t.startsWith('@elysiajs/'), values: false },
  { name: 'src/domain imports nothing from src/api', from: inDomain, forbids: (t) => t.startsWith('api/'), values: false },
  { name: 'src/domain imports nothing from src/modules', from: inDomain, forbids: (t) => t.startsWith('modules/'), values: false },
  { name: 'src/domain imports no concrete driver (only drivers/*/types and errors)', from: inDomain, forbids: isConcreteDriver, values: true },
  { name: 'src/api imports no concrete driver (only drivers/*/types and errors)', from: (f) => f.startsWith('api/'), forbids: isConcreteDriver, values: true },
  { name: 'only repositories and src/store use drizzle', from: (f) => !isRepository(f) && !f.startsWith('store/'), forbids: isDrizzle, values: true },
  { name: 'only repositories and src/store use the store\'s tables', from: (f) => !isRepository(f) && !f.startsWith('store/'), forbids: (t) => t === 'store/schema' || t.startsWith('store/schema/'), values: true },
  // The admin API (issue 37) answers on its root-only Unix socket only: no other door imports it.
  { name: 'the listeners, the API, the edge, the console and DNS import nothing from src/admin (its socket is its only door)', from: (f) => f === 'server' || f === 'dispatch' || /^(api|edge|console|dns)\//.test(f), forbids: (t) => t.startsWith('admin/'), values: false },
  { name: 'src/admin builds nothing: it imports no src/compose, src/cli or src/server (it is handed its facades)', from: (f) => f.startsWith('admin/'), forbids: (t) => t === 'compose' || t.startsWith('compose/') || t.startsWith('cli/') || t === 'server', values: false },
]

/**
 * Violations allowed for a while, each as the exact file and what it imports, with the work that
 * removes it. Empty: keep it so. The test fails on an entry that no longer matches, so a stale one
 * cannot linger.
 */
const KNOWN_UNTIL_MERGE: { file: string; target: string; by: string }[] = []

/** Every non-test source file under src/, as paths under src/. */
function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name)
    if (e.isDirectory()) return sources(path)
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && !e.name.endsWith('.d.ts') ? [relative(SRC, path)] : []
  })
}

/** Files longer than this are split along a seam: a reader should be able to take a file in whole. */
const MAX_LINES = 400
/** Folders of generated files, never edited by hand: drizzle-kit's migrations and their snapshots. */
const GENERATED = ['store/migrations/']

/** Every file under src/, tests included, as paths under src/. */
function allFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name)
    return e.isDirectory() ? allFiles(path) : [relative(SRC, path)]
  })
}

/** Lines as `wc -l` counts them: the newline characters. */
const lineCount = (path: string) => readFileSync(join(SRC, path)).reduce((n, byte) => (byte === 0x0a ? n + 1 : n), 0)

/** A specifier as a target: a src path without `.ts`, or the package (node: prefix dropped). */
function targetOf(fromFile: string, specifier: string): string {
  if (!specifier.startsWith('.')) return specifier.replace(/^node:/, '')
  const base = resolve(SRC, dirname(fromFile), specifier)
  const file = [`${base}.ts`, join(base, 'index.ts'), base].find((p) => p.endsWith('.ts') && existsSync(p)) ?? base
  return relative(SRC, file).replace(/\.ts$/, '')
}

/** True when an import or export clause names types only (`import type {...}`, `{ type A, type B }`). */
function typeOnlyClause(node: ts.ImportDeclaration | ts.ExportDeclaration): boolean {
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
function factsOf(path: string, text = readFileSync(join(SRC, path), 'utf8')): SourceFacts {
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

/** The IO kinds a file may use: those of the longest IO_ALLOWED prefix it falls under. */
function allowedIo(file: string): Io[] {
  const match = IO_ALLOWED.filter(([prefix]) => file === prefix.replace(/\.ts$/, '') || file.startsWith(prefix)).sort((a, b) => b[0].length - a[0].length)[0]
  return match?.[1] ?? []
}

const isKnown = (file: string, target: string) => KNOWN_UNTIL_MERGE.some((k) => k.file === file && k.target === target)

/** Every broken rule in `facts`, one line each; `known` collects the KNOWN_UNTIL_MERGE entries met. */
function violationsOf(facts: SourceFacts, known = new Set<string>()): string[] {
  const out: string[] = []
  const where = (line: number) => `src/${facts.file}.ts:${line}`
  for (const imp of facts.imports) {
    for (const rule of IMPORT_RULES) {
      if (!rule.from(facts.file) || !rule.forbids(imp.target) || (rule.values && !imp.value)) continue
      if (isKnown(facts.file, imp.target)) {
        known.add(`${facts.file} -> ${imp.target}`)
        continue
      }
      out.push(`${where(imp.line)} imports ${imp.target}: ${rule.name}`)
    }
    const io = IO_MODULES[imp.target]
    if (io && imp.value && !allowedIo(facts.file).includes(io)) out.push(`${where(imp.line)} imports ${imp.target} (${io}): ${ioRuleName(io)}`)
    if (imp.target === '<computed>') out.push(`${where(imp.line)} imports a computed name, which no rule can check`)
  }
  for (const call of facts.calls) {
    if (!allowedIo(facts.file).includes(call.io)) out.push(`${where(call.line)} uses ${call.what} (${call.io}): ${ioRuleName(call.io)}`)
  }
  if (!isRepository(facts.file) && !facts.file.startsWith('store/')) {
    for (const t of facts.tableAccess) {
      if (isKnown(facts.file, 'store tables')) {
        known.add(`${facts.file} -> store tables`)
        continue
      }
      out.push(`${where(t.line)} runs ${t.what}: only repositories and src/store use the store's tables`)
    }
  }
  return out
}

function ioRuleName(io: Io): string {
  const places = IO_ALLOWED.filter(([, kinds]) => kinds.includes(io)).map(([prefix]) => `src/${prefix}`)
  return `${io} only in ${places.join(', ')}`
}

describe('the architecture rules (docs/architecture.md)', () => {
  const all = sources().map((path) => factsOf(path))

  it('reads the tree: every layer is there, with its imports', () => {
    const files = new Set(all.map((f) => f.file))
    for (const f of ['server', 'compose/index', 'domain/sites/service', 'api/app', 'drivers/runtime/docker', 'dns/server', 'edge/proxy']) expect(files).toContain(f)
    expect(all.find((f) => f.file === 'drivers/runtime/docker')!.imports.map((i) => i.target)).toContain('dockerode')
  })

  it('holds for every file of src/', () => {
    const known = new Set<string>()
    const problems = all.flatMap((f) => violationsOf(f, known))
    expect(problems).toEqual([])
    // An allow-list entry whose violation is gone is deleted, not kept "just in case".
    expect(KNOWN_UNTIL_MERGE.map((k) => `${k.file} -> ${k.target}`).filter((k) => !known.has(k))).toEqual([])
  })

  it(`no file of src/ has more than ${MAX_LINES} lines (generated migrations aside)`, () => {
    const files = allFiles().filter((f) => !GENERATED.some((g) => f.startsWith(g)))
    expect(files).toContain('architecture.test.ts')
    const long = files.flatMap((f) => {
      const lines = lineCount(f)
      return lines > MAX_LINES ? [`src/${f}: ${lines} lines`] : []
    })
    expect(long).toEqual([])
  })

  describe('catches each kind of violation', () => {
    const check = (path: string, text: string) => violationsOf(factsOf(path, text))
    it.each([
      ['domain/x/service.ts', "import { Elysia } from 'elysia'", 'elysia'],
      ['domain/x/service.ts', "import type { ApiDeps } from '../../api/app'", 'src/api'],
      ['domain/x/service.ts', "import { catalog } from '../../modules/catalog'", 'src/modules'],
      ['domain/x/service.ts', "import { LocalArchiveStore } from '../../drivers/archives/local'", 'concrete driver'],
      ['api/x/routes.ts', "export { renderPortal } from '../../drivers/payments/local-portal'", 'concrete driver'],
      ['domain/x/service.ts', "import { eq } from 'drizzle-orm'", 'drizzle'],
      ['modules/x/service.ts', "import { sites } from '../../store/schema'", "store's tables"],
      ['jobs/x.ts', 'const q = store.sqlite.prepare("SELECT 1")', "store's tables"],
      ['domain/x/service.ts', "import { readFile } from 'node:fs/promises'", 'files only in'],
      ['domain/x/service.ts', "const fs = require('fs')", 'files only in'],
      ['domain/x/service.ts', "const { spawn } = await import('node:child_process')", 'processes only in'],
      ['domain/x/service.ts', "Bun.spawn(['tar'])", 'processes only in'],
      ['api/x/routes.ts', "import { $ } from 'bun'", 'processes only in'],
      ['modules/x/service.ts', 'await Bun.write(path, text)', 'files only in'],
      ['domain/x/service.ts', "await fetch('http://10.0.0.2/')", 'sockets only in'],
      ['edge/x.ts', "import Docker from 'dockerode'", 'docker only in'],
      ['drivers/files/x.ts', "import Docker from 'dockerode'", 'docker only in'],
      ['server.ts', "import { startAdminListener } from './admin/listener'", 'import nothing from src/admin'],
      ['api/x/routes.ts', "import { runAdminOp } from '../../admin/routes'", 'import nothing from src/admin'],
      ['admin/x.ts', "import { buildServices } from '../compose'", 'src/admin builds nothing'],
      ['admin/x.ts', "import type { Services } from '../compose/index'", 'src/admin builds nothing'],
    ])('%s: %s', (path, text, rule) => {
      expect(check(path, text).join('\n')).toContain(rule)
    })

    it.each([
      ['domain/x/service.ts', "import type { SiteRow } from '../../store/schema'"],
      ['domain/x/service.ts', "import { ArchiveMissingError, type ArchiveStore } from '../../drivers/archives/types'"],
      ['domain/x/service.ts', "import { FileError } from '../../drivers/files/errors'"],
      ['domain/x/service.ts', "import type { SiteHome } from '../../drivers/files/home'"],
      ['domain/x/service.ts', "import type { FileHandle } from 'node:fs/promises'"],
      ['domain/x/repository.ts', "import { eq } from 'drizzle-orm'"],
      ['modules/x/ai-usage-repository.ts', "import { aiUsage } from '../store/schema'"],
      ['drivers/archives/x.ts', "Bun.spawn(['tar'])"],
      ['edge/x.ts', 'Bun.connect({ hostname, port })'],
      ['domain/x/service.ts', 'const widget = "fetch(\'/ask\')"'],
    ])('allows %s: %s', (path, text) => {
      expect(check(path, text)).toEqual([])
    })
  })
})
