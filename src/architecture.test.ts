import { describe, expect, it } from 'vitest'
import { allFiles, factsOf, type Io, IO_MODULES, lineCount, type SourceFacts, sources } from '../test/helpers/source-facts'

/**
 * The rules of docs/architecture.md ("The rules"), checked on the import graph of every source
 * file under src/ (tests aside): each file is parsed with the TypeScript compiler, and its static
 * imports and re-exports, dynamic import()s and require()s, and its calls of Bun's process, file
 * and socket APIs are read off the syntax tree. A rule is a row of the tables below; a broken
 * rule names the file, the line and the rule.
 */
/** Files longer than this are split along a seam: a reader should be able to take a file in whole. */
const MAX_LINES = 400
/** Folders of generated files, never edited by hand: drizzle-kit's migrations and their snapshots. */
const GENERATED = ['store/migrations/']

const ALL_IO: Io[] = ['files', 'processes', 'sockets', 'docker', 'host']

/**
 * Where each kind of IO may be written. Everything else (src/domain, src/api, src/modules,
 * src/jobs, src/compose/ ...) reaches the outside only through a driver it is handed.
 * A file takes the longest matching prefix.
 */
const IO_ALLOWED: [prefix: string, kinds: Io[], why: string][] = [
  ['drivers/runtime/', ALL_IO, 'the container runtime: the only code that talks to Docker'],
  ['drivers/databases/', ALL_IO, 'the databases\' containers (issue 40): Docker too, through the runtime\'s engine helpers'],
  ['drivers/', ['files', 'processes', 'sockets', 'host'], 'the drivers: every outside system behind an interface'],
  ['store/', ['files'], 'the SQLite store and the chatbot\'s private index files, in Berth\'s data folder'],
  ['store/copy.ts', ['files', 'processes'], 'copies the database in a worker thread, so the server keeps answering'],
  ['cli/', ['files', 'processes', 'host'], 'the command line: reads the config, checks the host, runs systemctl'],
  ['install/', ['files'], 'berth install: writes the unit, the config and the sysctl file'],
  ['config/', ['files'], 'reads the config file, once, into a typed object'],
  ['server.ts', ['sockets'], 'the API listener (plain HTTP; the edge and MCP answer through it)'],
  ['admin/', ['sockets', 'files'], 'the admin API on its root-only Unix socket (berth serve) and its client (the admin commands)'],
  ['edge/', ['sockets'], 'the edge: its listeners and its HTTP/1.1 client to the sites\' containers'],
  ['edge/https.ts', ['sockets', 'files'], 'the HTTPS listener; it sets net.ipv4.tcp_migrate_req in /proc'],
  ['dns/server.ts', ['sockets'], 'the DNS listener (UDP and TCP)'],
  ['lib/private-file.ts', ['files'], 'writes secrets 0600 (the store, drivers and cli use it)'],
  ['lib/ports.ts', ['sockets'], 'a probe bind: is a host port free'],
  ['node-agent/', ['files', 'processes', 'sockets'], 'the node agent (berth node serve, berth node join): its listeners, forwards, homes and the join'],
]

/** A driver's contract files: what other layers may import from a driver as values. */
const isDriverContract = (file: string) => /^drivers\/[^/]+\/(types|errors)$/.test(file)
const isConcreteDriver = (file: string) => file.startsWith('drivers/') && !isDriverContract(file)
/** Repositories: the only code outside src/store that reads or writes the store's tables. */
const isRepository = (file: string) => /(^|\/)(repository|[\w-]+-repository)$/.test(file) || file.includes('/repositories/')

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

/**
 * The node agent's rules (issue 37, item 4; docs/architecture.md, "The node agent"): src/node-agent
 * is an app of its own, which needs nothing of the control plane's; the control plane reaches it
 * only through its client; `berth node` (cli/node.ts) runs it through its composition and join.
 */
const inAgent = (f: string) => f.startsWith('node-agent/')
const NODE_AGENT_RULES: ImportRule[] = [
  { name: 'src/node-agent imports nothing from src/domain, src/api, src/compose or src/edge', from: inAgent, forbids: (t) => /^(domain|api|compose|edge)\//.test(t), values: false },
  { name: 'the control plane reaches the node agent only through its client (src/node-agent/client/)', from: (f) => !inAgent(f) && f !== 'cli/node', forbids: (t) => inAgent(t) && !t.startsWith('node-agent/client/'), values: false },
  { name: 'berth node (src/cli/node.ts) runs the node agent through node-agent/compose and node-agent/join only', from: (f) => f === 'cli/node', forbids: (t) => inAgent(t) && t !== 'node-agent/compose' && t !== 'node-agent/join', values: false },
  { name: "the node agent's client and contract import nothing of its server", from: (f) => f.startsWith('node-agent/client/') || f.startsWith('node-agent/contract/'), forbids: (t) => t.startsWith('node-agent/server/'), values: false },
]

const IMPORT_RULES: ImportRule[] = [
  { name: 'src/domain imports nothing from elysia', from: inDomain, forbids: (t) => t === 'elysia' || t.startsWith('@elysiajs/'), values: false },
  { name: 'src/domain imports nothing from src/api', from: inDomain, forbids: (t) => t.startsWith('api/'), values: false },
  { name: 'src/domain imports nothing from src/modules', from: inDomain, forbids: (t) => t.startsWith('modules/'), values: false },
  { name: 'src/domain imports no concrete driver (only drivers/*/types and errors)', from: inDomain, forbids: isConcreteDriver, values: true },
  { name: 'src/api imports no concrete driver (only drivers/*/types and errors)', from: (f) => f.startsWith('api/'), forbids: isConcreteDriver, values: true },
  { name: 'only repositories and src/store use drizzle', from: (f) => !isRepository(f) && !f.startsWith('store/'), forbids: isDrizzle, values: true },
  { name: 'only repositories and src/store use the store\'s tables', from: (f) => !isRepository(f) && !f.startsWith('store/'), forbids: (t) => t === 'store/schema' || t.startsWith('store/schema/'), values: true },
  ...NODE_AGENT_RULES,
  // The admin API (issue 37) answers on its root-only Unix socket only: no other door imports it.
  { name: 'the listeners, the API, the edge, the console and DNS import nothing from src/admin (its socket is its only door)', from: (f) => f === 'server' || f === 'server-deps' || f === 'dispatch' || /^(api|edge|console|dns)\//.test(f), forbids: (t) => t.startsWith('admin/'), values: false },
  { name: 'src/admin builds nothing: it imports no src/compose, src/cli or src/server (it is handed its facades)', from: (f) => f.startsWith('admin/'), forbids: (t) => t === 'compose' || t.startsWith('compose/') || t.startsWith('cli/') || t === 'server' || t === 'server-deps', values: false },
]

/**
 * Violations allowed for a while, each as the exact file and what it imports, with the work that
 * removes it. Empty: keep it so. The test fails on an entry that no longer matches, so a stale one
 * cannot linger.
 */
const KNOWN_UNTIL_MERGE: { file: string; target: string; by: string }[] = []

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
      ['domain/x/service.ts', "import { execFile } from 'node:child_process'", 'processes only in'],
      ['api/x/routes.ts', "import { createServer } from 'node:net'", 'sockets only in'],
      ['domain/x/service.ts', "import { Resolver } from 'node:dns/promises'", 'sockets only in'],
      ['compose/x.ts', "import { promises as dns } from 'dns'", 'sockets only in'],
      ['compose/x.ts', "import { hostname } from 'node:os'", 'host only in'],
      ['domain/x/service.ts', 'const s3 = new Bun.S3Client({ bucket })', 'sockets only in'],
      ['api/x/routes.ts', "import { S3Client } from 'bun'", 'sockets only in'],
      ['domain/x/service.ts', 'const worker = new Worker(url)', 'processes only in'],
      ['store/x.ts', "import { Worker } from 'node:worker_threads'", 'processes only in'],
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
      ['drivers/offsite/x.ts', 'private readonly client: Bun.S3Client'],
      ['drivers/host/x.ts', "import { cpus } from 'node:os'"],
      ['store/copy.ts', 'const worker = new Worker(url)'],
    ])('allows %s: %s', (path, text) => {
      expect(check(path, text)).toEqual([])
    })
  })
})

describe("the node agent's rules (docs/architecture.md, \"The node agent\")", () => {
  const check = (path: string, text: string) => violationsOf(factsOf(path, text))
  it.each([
    ['node-agent/server/x.ts', "import { SitesService } from '../../domain/sites/service'", 'src/node-agent imports nothing from src/domain'],
    ['node-agent/x.ts', "import type { ApiDeps } from '../api/app'", 'src/node-agent imports nothing from src/domain, src/api'],
    ['node-agent/client/x.ts', "import { buildServices } from '../../compose'", 'src/node-agent imports nothing from src/domain, src/api, src/compose'],
    ['node-agent/server/x.ts', "import { createEdgeProxy } from '../../edge/proxy'", 'or src/edge'],
    ['domain/cluster/x.ts', "import { agentHandlers } from '../../node-agent/server/api'", 'only through its client'],
    ['compose/x.ts', "import type { AgentRoutes } from '../node-agent/contract/routes'", 'only through its client'],
    ['drivers/cluster/x.ts', "import { serveNode } from '../../node-agent/compose'", 'only through its client'],
    ['cli/node.ts', "import { startAgent } from '../node-agent/server/server'", 'through node-agent/compose and node-agent/join only'],
    ['node-agent/client/x.ts', "import { homeHandlers } from '../server/home-agent'", 'import nothing of its server'],
    ['node-agent/contract/x.ts', "import type { AgentApi } from '../server/api'", 'import nothing of its server'],
    ['node-agent/server/x.ts', "import Docker from 'dockerode'", 'docker only in'],
  ])('%s: %s', (path, text, rule) => {
    expect(check(path, text).join('\n')).toContain(rule)
  })

  it.each([
    ['domain/cluster/x.ts', "import { callAgent } from '../../node-agent/client/calls'"],
    ['drivers/cluster/x.ts', "import { homeEndpoint } from '../../node-agent/client/remote-home'"],
    ['cli/node.ts', "import { serveNode } from '../node-agent/compose'"],
    ['node-agent/server/x.ts', "import { SLUG_PATTERN } from '../../core/slugs'"],
    ['node-agent/server/x.ts', "import { volumeMounts } from '../../drivers/runtime/node-volumes'"],
    ['node-agent/server/x.ts', "Bun.spawn(['tar'])"],
  ])('allows %s: %s', (path, text) => {
    expect(check(path, text)).toEqual([])
  })
})
