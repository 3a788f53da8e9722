import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * Issue 37: one site-container implementation. A single box and a cluster run sites through
 * SiteRuntime (site-runtime.ts) over their SiteHost; DockerRuntime and ClusterRuntime only
 * construct it. And placement is a typed dependency: nothing finds it by an object's shape.
 * Checked on the sources of src/ (tests aside), each rule also on a planted violation.
 */
const SRC = join(import.meta.dirname, '../..')

function sources(dir = SRC): { path: string; text: string }[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    if (!entry.name.endsWith('.ts') || entry.name.endsWith('.test.ts')) return []
    return [{ path: relative(SRC, path), text: readFileSync(path, 'utf8') }]
  })
}

/** The classes that implement ContainerRuntime themselves (`class X implements ... ContainerRuntime`). */
export function runtimeImplementations(files: { path: string; text: string }[]): string[] {
  return files.flatMap(({ path, text }) => [...text.matchAll(/\bclass\s+(\w+)[^{]*?\bimplements\b[^{]*?\bContainerRuntime\b/g)].map((m) => `${path}: ${m[1]}`))
}

/** Places that take a Placement from an object's shape: a `Partial<Placement>` cast, or a `placementOf(x: unknown)`. */
export function placementShapeTests(files: { path: string; text: string }[]): string[] {
  return files.flatMap(({ path, text }) => text.split('\n').flatMap((line, i) => (/Partial<Placement>|placementOf\s*\(\s*\w+\s*:\s*unknown/.test(line) ? [`${path}:${i + 1}`] : [])))
}

describe('one site-container implementation', () => {
  const files = sources()

  it('has exactly one class implementing ContainerRuntime in src/: SiteRuntime', () => {
    expect(runtimeImplementations(files)).toEqual(['drivers/runtime/site-runtime.ts: SiteRuntime'])
  })

  it('finds a second implementation when one is planted', () => {
    const planted = { path: 'drivers/runtime/other.ts', text: 'export class OtherRuntime implements ContainerRuntime, Placement {\n}' }
    expect(runtimeImplementations([...files, planted])).toContain('drivers/runtime/other.ts: OtherRuntime')
  })

  it('never takes a placement from an object’s shape', () => {
    expect(placementShapeTests(files)).toEqual([])
  })

  it('finds a shape test when one is planted', () => {
    const planted = { path: 'compose/x.ts', text: 'const a = 1\nconst p = typeof (runtime as Partial<Placement>).nodeOf === "function"' }
    expect(placementShapeTests([planted])).toEqual(['compose/x.ts:2'])
    expect(placementShapeTests([{ path: 'compose/y.ts', text: 'export function placementOf(runtime: unknown) {}' }])).toEqual(['compose/y.ts:1'])
  })
})
