import { describe, expect, it } from 'vitest'
import { factsOf, IO_MODULES, type SourceFacts, sources } from '../test/helpers/source-facts'
import { AREA_KNOWN, CYCLES_KNOWN } from '../test/helpers/architecture-known'

/**
 * The rules on the import graph as a whole (docs/architecture.md, "The rules"): the areas of
 * src/domain as modules, no import circle anywhere, and what each outer layer may import. The rules
 * on single imports (layers, IO, tables) are in architecture.test.ts.
 *
 * A circle counts type imports too: a type-only circle costs nothing at run time, but the two files
 * still cannot be read, moved or split one without the other, and today's tree has none that only
 * types make (the value-only graph has the same two circles), so the stricter rule is free.
 */

/** The area a file or target belongs to (`domain/sites/runner` -> `sites`), or null. */
export function areaOf(file: string): string | null {
  const parts = file.split('/')
  return parts[0] === 'domain' && parts.length > 2 ? parts[1]! : null
}

const where = (f: SourceFacts, line: number) => `src/${f.file}.ts:${line}`

/**
 * Another area is reached through its index.ts only, from anywhere outside it: so what an area
 * exposes (its facade, views, events, the factory of its services) is one file, and its repository
 * and helpers are its own business.
 */
export function areaViolations(all: SourceFacts[], known: Record<string, string> = AREA_KNOWN, met = new Set<string>()): string[] {
  const out: string[] = []
  for (const f of all) {
    for (const imp of f.imports) {
      const area = areaOf(imp.target)
      if (!area || areaOf(f.file) === area || imp.target === `domain/${area}/index`) continue
      if ((known[f.file] ?? '').split(' ').includes(imp.target.slice('domain/'.length))) {
        met.add(`${f.file} -> ${imp.target}`)
        continue
      }
      out.push(`${where(f, imp.line)} imports ${imp.target}: another area only through its index.ts (domain/${area}/index.ts)`)
    }
  }
  return out
}

/** Tarjan's strongly connected components of `graph`: every circle, as its sorted members. */
export function circles(graph: Map<string, string[]>): string[][] {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const connect = (v: string) => {
    index.set(v, next)
    low.set(v, next++)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) !== index.get(v)) return
    const members: string[] = []
    let w: string
    do {
      w = stack.pop()!
      onStack.delete(w)
      members.push(w)
    } while (w !== v)
    if (members.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(members.sort())
  }
  for (const v of graph.keys()) if (!index.has(v)) connect(v)
  return found
}

/** The graph of files: each source file to the source files it imports (values and types). */
export function fileGraph(all: SourceFacts[]): Map<string, string[]> {
  const files = new Set(all.map((f) => f.file))
  return new Map(all.map((f) => [f.file, [...new Set(f.imports.map((i) => i.target).filter((t) => files.has(t)))]]))
}

/** The graph of areas: `sites` -> `plans` when a file of one imports a file of the other. */
export function areaGraph(all: SourceFacts[]): Map<string, string[]> {
  const graph = new Map<string, Set<string>>()
  for (const f of all) {
    const from = areaOf(f.file)
    if (!from) continue
    for (const imp of f.imports) {
      const to = areaOf(imp.target)
      if (to && to !== from) graph.set(from, (graph.get(from) ?? new Set()).add(to))
    }
  }
  return new Map([...graph].map(([k, v]) => [k, [...v]]))
}

/** Every circle among files and among areas, one line each, known ones aside. */
export function circleViolations(all: SourceFacts[], known: string[] = CYCLES_KNOWN, met = new Set<string>()): string[] {
  const named = [
    ...circles(fileGraph(all)).map((c) => `files ${c.join(' ')}`),
    ...circles(areaGraph(all)).map((c) => `areas ${c.join(' ')}`),
  ]
  return named.flatMap((c) => {
    if (known.includes(c)) {
      met.add(c)
      return []
    }
    return [`an import circle between ${c}`]
  })
}

/**
 * What the outer layers may import, besides themselves and packages: `values` as values, `types`
 * as types only. A prefix of src/ (`domain/` is every area, reached through its index by the area
 * rule). Written from what each imports, less what was wrong.
 */
const LAYERS: { layer: string; values: string[]; types: string[]; why: string }[] = [
  { layer: 'drivers/', values: ['drivers/', 'core/', 'lib/', 'version', 'node-agent/client/', 'node-agent/contract/'], types: ['config/', 'domain/'], why: "a driver talks to one outside system (a node's engine and homes through the node agent's client); it is handed its settings, and may implement a port the domain declares" },
  { layer: 'edge/', values: ['edge/', 'core/', 'lib/', 'dispatch'], types: [], why: 'the edge proxies by a resolver it is handed; the HTTPS listener serves dispatch\'s table' },
  { layer: 'dns/', values: ['dns/', 'lib/'], types: [], why: 'the DNS listener answers over the Authority interface the domain implements' },
  { layer: 'console/', values: ['console/', 'domain/', 'lib/'], types: ['dispatch'], why: 'the console\'s door over the console area\'s sessions' },
  { layer: 'jobs/', values: ['jobs/', 'store/', 'lib/'], types: [], why: 'the job runner over the store: a job\'s work is a handler it is handed' },
  { layer: 'cli/', values: ['cli/', 'compose/', 'config/', 'core/', 'domain/', 'drivers/', 'edge/', 'install/', 'lib/', 'node-agent/', 'admin/', 'server', 'store/', 'version'], types: ['api/'], why: 'the command line: it builds what a command needs through compose/ and prints it' },
]

const under = (target: string, prefix: string) => (prefix.endsWith('/') ? target.startsWith(prefix) : target === prefix)
/** The folders and files at the top of src/ (`domain`, `server` ...): what a target under src/ starts with. */
const TOP = new Set(sources().map((f) => f.replace(/\.ts$/, '').split('/')[0]!))
/** A target under src/ (a package such as `fs/promises` or `@xterm/xterm/...` is not, nor node's `dns`). */
const isSource = (target: string) => TOP.has(target.split('/')[0]!) && !(target in IO_MODULES)

/** Each import of an outer layer that its row of LAYERS does not allow. */
export function layerViolations(all: SourceFacts[]): string[] {
  const out: string[] = []
  for (const f of all) {
    const row = LAYERS.find((l) => f.file.startsWith(l.layer))
    if (!row) continue
    for (const imp of f.imports) {
      if (!isSource(imp.target) || row.values.some((p) => under(imp.target, p))) continue
      if (!imp.value && row.types.some((p) => under(imp.target, p))) continue
      out.push(`${where(f, imp.line)} imports ${imp.target}${imp.value ? '' : ' (type)'}: src/${row.layer} may import ${row.values.join(', ')}${row.types.length ? `, and types of ${row.types.join(', ')}` : ''} (${row.why})`)
    }
  }
  return out
}

describe('the import graph (docs/architecture.md, "The rules")', () => {
  const all = sources().map((path) => factsOf(path))

  it('another area is imported only through its index.ts', () => {
    const met = new Set<string>()
    expect(areaViolations(all, AREA_KNOWN, met)).toEqual([])
    const listed = Object.entries(AREA_KNOWN).flatMap(([file, targets]) => targets.split(' ').map((t) => `${file} -> domain/${t}`))
    expect(listed.filter((k) => !met.has(k))).toEqual([])
  })

  it('no import circle anywhere in src/: between files (compose/ included) or between areas', () => {
    const met = new Set<string>()
    expect(circleViolations(all, CYCLES_KNOWN, met)).toEqual([])
    expect(CYCLES_KNOWN.filter((k) => !met.has(k))).toEqual([])
  })

  it('drivers/, edge/, dns/, console/, jobs/ and cli/ import only what their row allows', () => {
    expect(layerViolations(all)).toEqual([])
  })

  describe('catches each kind of violation', () => {
    const planted = (files: Record<string, string>) => Object.entries(files).map(([path, text]) => factsOf(path, text))

    it('an area reached past its index', () => {
      const found = areaViolations(planted({ 'api/x/routes.ts': "import { SitesRepository } from '../../domain/sites/repository'" }), {})
      expect(found.join('\n')).toContain('another area only through its index.ts')
      expect(areaViolations(planted({ 'domain/plans/x.ts': "import type { SiteView } from '../sites/views'" }), {})).toHaveLength(1)
    })

    it('allows an area\'s own files and another\'s index', () => {
      expect(areaViolations(planted({
        'domain/sites/x.ts': "import { SitesRepository } from './repository'",
        'compose/x.ts': "import { buildSites } from '../domain/sites/index'",
        'api/x/routes.ts': "import { invalid } from '../../domain/errors'",
      }), {})).toEqual([])
    })

    it('a circle of two files, of three, through a type, and inside compose/', () => {
      expect(circleViolations(planted({ 'lib/a.ts': "import { b } from './b'", 'lib/b.ts': "import { a } from './a'" }), [])).toEqual(['an import circle between files lib/a lib/b'])
      expect(circleViolations(planted({
        'compose/index.ts': "import { buildSites } from './sites'",
        'compose/sites.ts': "import type { Core } from './core'",
        'compose/core.ts': "import { buildServices } from './index'",
      }), [])).toEqual(['an import circle between files compose/core compose/index compose/sites'])
      expect(circleViolations(planted({ 'lib/a.ts': "import { b } from './b'", 'lib/b.ts': "import { c } from './c'" }), [])).toEqual([])
    })

    it('a circle between areas that no two files close', () => {
      const found = circleViolations(planted({
        'domain/billing/service.ts': "import { SitesService } from '../sites/index'",
        'domain/sites/service.ts': "import { Plans } from '../billing/plans'",
      }), [])
      expect(found).toEqual(['an import circle between areas billing sites'])
    })

    it.each([
      ['drivers/x/y.ts', "import { SitesService } from '../../domain/sites/index'"],
      ['drivers/x/y.ts', "import { loadConfig } from '../../config/config'"],
      ['edge/x.ts', "import type { SiteRow } from '../store/schema'"],
      ['dns/x.ts', "import { ZoneBook } from '../domain/dns/index'"],
      ['console/x.ts', "import { createApp } from '../api/app'"],
      ['jobs/x.ts', "import { SiteRunner } from '../domain/sites/index'"],
      ['cli/x.ts', "import { createApp } from '../api/app'"],
    ])('a layer importing past its row: %s %s', (path, text) => {
      expect(layerViolations(planted({ [path]: text })).join('\n')).toContain('may import')
    })

    it.each([
      ['drivers/x/y.ts', "import type { BerthConfig } from '../../config/config'"],
      ['cli/x.ts', "import type { PlanBody } from '../api/plans/model'"],
      ['jobs/x.ts', "import { eq } from 'drizzle-orm'"],
    ])('allows %s %s', (path, text) => {
      expect(layerViolations(planted({ [path]: text }))).toEqual([])
    })
  })
})
