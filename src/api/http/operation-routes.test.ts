import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'
import { DomainError, op, say } from '../../domain/errors'
import { operationRenderer } from './operation-routes'

const h = inProcess()
afterAll(() => h.close())
const render = operationRenderer(h.app.routes)

/** Every operation id the domain layer names in a message: `op('scaleSite'`. */
function operationsNamedByDomain(): string[] {
  const dir = join(import.meta.dirname, '../../domain')
  const ids = new Set<string>()
  for (const file of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.ts') || file.endsWith('.test.ts')) continue
    for (const m of readFileSync(join(dir, file), 'utf8').matchAll(/\bop\('(\w+)'/g)) ids.add(m[1]!)
  }
  return [...ids].sort()
}

describe('operation names in messages (REST door)', () => {
  it('renders an operation as its method and path, with the known parameters filled in', () => {
    expect(render(op('getBackup', { tenant_slug: 'shop', backup_id: 'a1b2' }))).toBe('GET /sites/shop/backups/a1b2/')
    expect(render(op('scaleSite', { tenant_slug: 'acme' }))).toBe('POST /sites/acme/scale/')
    expect(render(op('listPlans'))).toBe('GET /plans/')
  })

  it('leaves the parameters it does not know as {name}', () => {
    expect(render(op('getBackup', { tenant_slug: 'shop' }))).toBe('GET /sites/shop/backups/{backup_id}/')
  })

  it('names an operation with no route by its id rather than failing', () => {
    expect(render(op('noSuchOperation'))).toBe('noSuchOperation')
  })

  it('gives a route to every operation the domain names', () => {
    const ids = operationsNamedByDomain()
    expect(ids.length).toBeGreaterThan(10)
    const unrouted = ids.filter((id) => !/^(GET|POST|PUT|PATCH|DELETE) \/\S*\/$/.test(render(op(id))))
    expect(unrouted).toEqual([])
  })

  it('answers an agent with the route in the error message', async () => {
    const { key } = await h.register()
    const res = await h.call('GET', '/api/v1/sites/nope-404/', { key })
    expect(res.status).toBe(404)
    expect(res.json.error.message).toContain('GET /sites/')
    expect(res.json.error.message).not.toContain("op(")
  })

  it('renders a domain message for logs with operation ids', () => {
    const err = new DomainError('conflict', say`Run ${op('restoreSite', { tenant_slug: 'x' })} first.`, null)
    expect(err.message).toBe('Run restoreSite first.')
  })
})
