import { describe, expect, it } from 'vitest'
import { OffsiteUnavailableError } from './types'
import { s3Failure } from './s3-failures'

const WHERE = 's3://bucket/prefix at 127.0.0.1:9'

describe('s3Failure', () => {
  it('calls a request that timed out on its own signal unreachable, as the deadline around it would', async () => {
    const signal = AbortSignal.timeout(1)
    await Bun.sleep(20)
    expect((s3Failure(signal.reason, WHERE, []) as OffsiteUnavailableError).kind).toBe('unreachable')
  })

  it('keeps a failure it does not know as other, with its message', () => {
    const failure = s3Failure(new Error('the bucket is haunted'), WHERE, []) as OffsiteUnavailableError
    expect(failure.kind).toBe('other')
    expect(failure.message).toContain('the bucket is haunted')
  })
})
