import { describe, expect, it } from 'vitest'
import { ASSETS_PATH, assetResponse } from './assets'

describe('the console page assets', () => {
  it('are served as text with their types, whoever imports them (the binary or a test of the server)', async () => {
    const script = assetResponse(`${ASSETS_PATH}console.js?v=1`)!
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect(await script.text()).toContain("'use strict'")
    const xterm = assetResponse(`${ASSETS_PATH}xterm.js`)!
    expect(await xterm.text()).toMatch(/Terminal/)
    expect(assetResponse(`${ASSETS_PATH}../page.ts`)).toBeNull()
  })
})
