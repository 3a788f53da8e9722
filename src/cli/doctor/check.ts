/**
 * One finding of `berth doctor`: what was checked, how it stands, what was seen, and the one line
 * that fixes it ('' when it passes).
 */
export interface CheckResult {
  name: string
  status: CheckStatus
  detail: string
  fix: string
}

/** PASS: as it should be. WARN: works, but not as a box going live should be. FAIL: Berth will not work so. */
export type CheckStatus = 'PASS' | 'WARN' | 'FAIL'

export const pass = (name: string, detail: string): CheckResult => ({ name, status: 'PASS', detail, fix: '' })
export const warn = (name: string, detail: string, fix: string): CheckResult => ({ name, status: 'WARN', detail, fix })
export const fail = (name: string, detail: string, fix: string): CheckResult => ({ name, status: 'FAIL', detail, fix })

/** The message of whatever a probe threw. */
export const reasonOf = (err: unknown) => (err instanceof Error ? err.message : String(err))

export const GIB = 1024 ** 3

/** Bytes as a hoster reads them: `4.2 GiB`, `870 MiB`. */
export function sizeText(bytes: number): string {
  if (bytes >= GIB) return `${(bytes / GIB).toFixed(1)} GiB`
  return `${Math.round(bytes / 1024 ** 2)} MiB`
}
