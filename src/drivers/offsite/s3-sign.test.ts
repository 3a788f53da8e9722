import { describe, expect, it } from 'vitest'
import { EMPTY_SHA256, encodeKeyPath, signRequest } from './s3-sign'

/**
 * AWS's own examples of Signature Version 4 for S3 (the Amazon S3 API reference, "Examples:
 * signature calculations", header-based authentication): same inputs, same signatures. s3rver
 * does not check signatures, so these are what holds the signer to real S3.
 */
const credentials = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', region: 'us-east-1' }
const now = new Date('2013-05-24T00:00:00Z')
const signatureOf = (headers: Record<string, string>) => /Signature=([0-9a-f]{64})$/.exec(headers.authorization!)?.[1]

describe('signRequest (AWS Signature Version 4)', () => {
  it('GET an object with a Range header', () => {
    const h = signRequest({ method: 'GET', url: new URL('https://examplebucket.s3.amazonaws.com/test.txt'), headers: { Range: 'bytes=0-9' }, payloadSha256: EMPTY_SHA256, credentials, now })
    expect(h.authorization).toBe('AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41')
    expect(h['x-amz-date']).toBe('20130524T000000Z')
  })

  it('PUT an object whose key has a character to encode', () => {
    const body = 'Welcome to Amazon S3.'
    const h = signRequest({
      method: 'PUT',
      url: new URL(`https://examplebucket.s3.amazonaws.com/${encodeKeyPath('test$file.text')}`),
      headers: { Date: 'Fri, 24 May 2013 00:00:00 GMT', 'x-amz-storage-class': 'REDUCED_REDUNDANCY' },
      payloadSha256: new Bun.CryptoHasher('sha256').update(body).digest('hex'),
      credentials,
      now,
    })
    expect(signatureOf(h)).toBe('98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd')
  })

  it('GET a bucket sub-resource with an empty query value (?lifecycle)', () => {
    const h = signRequest({ method: 'GET', url: new URL('https://examplebucket.s3.amazonaws.com/?lifecycle'), payloadSha256: EMPTY_SHA256, credentials, now })
    expect(signatureOf(h)).toBe('fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543')
  })

  it('GET a listing with query parameters, sorted', () => {
    const h = signRequest({ method: 'GET', url: new URL('https://examplebucket.s3.amazonaws.com/?prefix=J&max-keys=2'), payloadSha256: EMPTY_SHA256, credentials, now })
    expect(signatureOf(h)).toBe('34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7')
  })

  it('encodes each key segment and keeps the slashes', () => {
    expect(encodeKeyPath('box/a b/c+d*(e)')).toBe('box/a%20b/c%2Bd%2A%28e%29')
  })
})
