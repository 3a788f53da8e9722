import { asUnavailable, isNotFound, openEngine } from './engine'

/** A slow engine is not a healthy one: `berth doctor` waits this long for each answer. */
const FACTS_TIMEOUT_MS = 5000

/** The engine's version (`docker version`'s server part); throws RuntimeUnavailableError when it does not answer. */
export async function engineVersionAt(socketPath: string): Promise<{ version: string; apiVersion: string }> {
  const docker = await openEngine(socketPath, FACTS_TIMEOUT_MS)
  const info = await factsCall(socketPath, () => docker.version())
  return { version: info.Version, apiVersion: info.ApiVersion }
}

/** Which of `images` (name:tag) the engine does not hold. */
export async function missingImagesAt(socketPath: string, images: string[]): Promise<string[]> {
  const docker = await openEngine(socketPath, FACTS_TIMEOUT_MS)
  const missing: string[] = []
  for (const image of images) {
    try {
      await factsCall(socketPath, () => docker.getImage(image).inspect())
    } catch (err) {
      if (!isNotFound(err)) throw err
      missing.push(image)
    }
  }
  return missing
}

/** Runs `fn`; an engine that is not there throws a short reason (the checks name the socket and the fix). */
async function factsCall<T>(socketPath: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    if (!asUnavailable(socketPath, err)) throw err
    throw new Error(`nothing answers on the socket (${(err as { code?: string }).code})`, { cause: err })
  }
}
