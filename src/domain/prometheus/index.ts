/** The prometheus area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { EXPOSITION_CONTENT_TYPE } from './exposition'
export { scrapeMetrics } from './scrape'
