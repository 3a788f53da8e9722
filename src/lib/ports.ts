/**
 * True when nothing listens on the host port: a probe bind, closed at once. Docker's userland
 * proxy binds every published port, so ports of other engines' users show as taken too.
 */
export function hostPortFree(address: string, port: number): boolean {
  try {
    Bun.listen({ hostname: address, port, socket: { data() {} } }).stop(true)
    return true
  } catch {
    return false
  }
}
