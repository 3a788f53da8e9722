/** What the platform says about itself (getStatus and, later, the discovery documents). */
export interface StatusInfo {
  region: string
  provider: string
  version: string
  /** The payment processor taking payments (`local`: the built-in test processor). */
  processor: string
  /** True while no real money moves. */
  testMode: boolean
  dns: { port: number | null; nameservers: string[] }
  registrar: { name: string; sandbox: boolean }
}
