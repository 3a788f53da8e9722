import { timingSafeEqual } from 'node:crypto'

/** The value of cookie `name` in the request, if it sent one. */
export function cookieOf(request: Request, name: string): string | undefined {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=')
    if (k === name) return v.join('=')
  }
  return undefined
}

/** Compares two tokens in constant time (a form's CSRF field with its cookie). */
export function timingSafeEqualText(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}
