import { afterAll, describe, expect, it } from 'vitest'
import { AnswerChecker } from './answer-checker'
import { inProcess } from './in-process'

// The checker that every test helper runs answers through must itself fail on a disagreement:
// here against the real document, and against copies of it made deliberately wrong.
const h = inProcess()
afterAll(() => h.close())

async function doc(): Promise<Record<string, any>> {
  return (await h.call('GET', '/api/v1/openapi.json')).json
}

async function answer(path: string) {
  const res = await h.app.handle(new Request(`http://localhost${path}`))
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() }
}

describe('AnswerChecker', () => {
  it('accepts answers the document describes, success and error', async () => {
    const checker = new AnswerChecker(await doc())
    const status = await answer('/api/v1/status/')
    expect(checker.problem('GET', '/api/v1/status/', status.status, status.type, status.text)).toBeNull()
    const missing = await answer('/api/v1/plans/no-such-plan/')
    expect(missing.status).toBe(404)
    expect(checker.problem('GET', '/api/v1/plans/no-such-plan/', missing.status, missing.type, missing.text)).toBeNull()
  })

  it('fails an answer whose body the schema does not allow (a deliberately wrong schema)', async () => {
    const wrong = await doc()
    const data = wrong.paths['/status/'].get.responses['200'].content['application/json'].schema.properties.data
    data.properties.made_up = { type: 'string' }
    data.required = [...(data.required ?? []), 'made_up']
    const checker = new AnswerChecker(wrong)
    const status = await answer('/api/v1/status/')
    expect(checker.problem('GET', '/api/v1/status/', status.status, status.type, status.text)).toMatch(/GET \/status\/ answered 200 with a body the document does not describe: .*made_up/)
    expect(() => checker.check('GET', '/api/v1/status/', status.status, status.type, status.text)).toThrow(/Answer not in openapi.json/)
  })

  it('fails a status the operation does not list', async () => {
    const wrong = await doc()
    delete wrong.paths['/plans/{plan_slug}/'].get.responses['404']
    const checker = new AnswerChecker(wrong)
    const missing = await answer('/api/v1/plans/no-such-plan/')
    expect(checker.problem('GET', '/api/v1/plans/no-such-plan/', 404, missing.type, missing.text)).toMatch(/answered 404, which the document does not list/)
  })

  it('fails an error body that is not the envelope, and a body that is not JSON', async () => {
    const checker = new AnswerChecker(await doc())
    const notEnvelope = JSON.stringify({ error: 'nope' })
    expect(checker.problem('GET', '/api/v1/plans/x/', 404, 'application/json', notEnvelope)).toMatch(/does not describe/)
    expect(checker.problem('GET', '/api/v1/no-such-route/', 404, 'application/json', notEnvelope)).toMatch(/does not describe/)
    expect(checker.problem('GET', '/api/v1/status/', 200, 'text/html', '<html>')).toMatch(/not JSON/)
  })
})
