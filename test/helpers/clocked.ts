import { startBerth, type Berth } from './binary'
import { instanceOf, removeInstanceSites } from './sites'

/** A day in seconds, for clocks moved ahead by days. */
export const DAY_S = 24 * 3600

/**
 * The compiled binary started again and again on one data folder with its clock moved ahead
 * (BERTH_DEV_CLOCK_OFFSET_SECONDS): a renewal a month later, a grace period's end. Every Berth
 * started is kept for `stopAll`, which also removes its sites' containers.
 */
export class ClockedBerths {
  private started: Berth[] = []

  constructor(private env: Record<string, string>) {}

  /** The binary on `dataDir` and `port`, its clock `offsetSeconds` ahead, with `env` over the common variables. */
  async at(offsetSeconds: number, dataDir: string, port: number, env: Record<string, string> = {}): Promise<Berth> {
    const b = await startBerth({ dataDir, port, env: { ...this.env, BERTH_DEV_CLOCK_OFFSET_SECONDS: String(Math.round(offsetSeconds)), ...env } })
    this.started.push(b)
    instanceOf(b)
    return b
  }

  async stopAll(): Promise<void> {
    for (const b of this.started) await b.stop()
    for (const b of this.started) await removeInstanceSites(b)
  }
}
