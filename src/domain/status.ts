import type { RoomFigures } from './room'

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
  /** Whether the container engine answers, as the event watcher last found. */
  engine: EngineHealth
  /** Copies off the box: whether they are on, and the age of the last store copy (null: none). */
  offsite: { enabled: boolean; lastStoreCopyAgeSeconds(): number | null }
  /** The data folder's free space against the reserve Berth keeps for itself (domain/room), read at each call. */
  room: { figures(): RoomFigures }
}

/**
 * Whether the container engine answered Berth's last liveness check: `null` until the first
 * (the event watcher starts half a second after Berth listens), then kept by the watcher,
 * which checks every 2 s (drivers/runtime/events.ts).
 */
export class EngineHealth {
  private state: boolean | null = null

  get reachable(): boolean | null {
    return this.state
  }

  set(reachable: boolean): void {
    this.state = reachable
  }
}
