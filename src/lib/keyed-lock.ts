/**
 * Runs tasks one at a time per key, in call order; different keys run concurrently. The
 * provisioning job and the reconciler may ensure the same site at once, and two creates of one
 * container name would make the second fail with a name conflict.
 */
export class KeyedLock {
  private tails = new Map<string, Promise<unknown>>()

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve()
    const result = previous.then(task, task)
    const tail = result.catch(() => {})
    this.tails.set(key, tail)
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key)
    })
    return result
  }
}
