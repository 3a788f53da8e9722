import type { Config } from '../../config/config'
import type { Logger } from '../../lib/logger'
import { OpenAiCompatibleProvider } from './openai'
import type { AiProvider } from './types'

/**
 * The AI provider the config names (`[ai]`), or null when `ai.base_url` is empty: there is no
 * embedded default, and modules that need a model say they are unavailable instead.
 *
 * @example
 * const ai = selectAiProvider(config, log) // null on the embedded default configuration
 */
export function selectAiProvider(config: Config, log: Logger): AiProvider | null {
  const { baseUrl, apiKey, model, embeddingModel, timeoutMs } = config.ai
  if (!baseUrl) return null
  return new OpenAiCompatibleProvider({ baseUrl, apiKey, model, embeddingModel, timeoutMs, log })
}
