/** Webhooks (issue 41): endpoints, the fan-out of events to deliveries, and their sender. */
export { WebhooksRepository, type WebhookDeliveryRow, type WebhookEndpointRow } from './repository'
export { WebhooksService, MAX_WEBHOOK_ENDPOINTS, MAX_WEBHOOK_URL_LENGTH, PREVIOUS_SECRET_MS, type EndpointInput } from './service'
export { WebhookSender, secretOwner, type WebhookSenderDeps } from './sender'
export { RETRY_STEPS_MS, WEBHOOK_DISABLE_AFTER_MS, retryDelay, retryAfterMs } from './schedule'
export { newWebhookSecret, signatureOf, webhookHeaders, SECRET_PREFIX } from './signing'
export { WebhookDelivery, WebhookEndpoint, WebhookEndpointWithSecret, deliveryView, endpointView } from './views'
