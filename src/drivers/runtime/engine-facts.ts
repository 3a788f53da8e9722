import { engineCall, isNotFound, openEngine } from './engine'

/** A slow engine is not a healthy one: `berth doctor` waits this long for each answer. */
const FACTS_TIMEOUT_MS = 5000

/** The engine's version (`docker version`'s server part); throws RuntimeUnavailableError when it does not answer. */
export async function engineVersionAt(socketPath: string): Promise<{ version: string; apiVersion: string }> {
  const docker = await openEngine(socketPath, FACTS_TIMEOUT_MS)
  const info = await engineCall(socketPath, () => docker.version())
  return { version: info.Version, apiVersion: info.ApiVersion }
}

/** Which of `images` (name:tag) the engine does not hold. */
export async function missingImagesAt(socketPath: string, images: string[]): Promise<string[]> {
  const docker = await openEngine(socketPath, FACTS_TIMEOUT_MS)
  const missing: string[] = []
  for (const image of images) {
    try {
      await engineCall(socketPath, () => docker.getImage(image).inspect())
    } catch (err) {
      if (!isNotFound(err)) throw err
      missing.push(image)
    }
  }
  return missing
}
