import { Elysia, t } from 'elysia'
import { NoBody, ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { ApiKeyCreated, CreateKeyBody, KeyIdParams, KeyListItem, KeyListQuery } from './model'
import type { KeysService } from '../../domain/keys'

export const keyRoutes = (plugins: ApiPlugins, keys: KeysService) =>
  new Elysia({ name: 'key-routes' })
    .use(plugins)
    .get('/keys/', ({ principal, query }) => keys.list(principal, query.include_revoked ?? false), {
      scope: 'read',
      query: KeyListQuery,
      response: ok(t.Array(KeyListItem)),
      detail: { tags: ['Keys'], summary: "List the account's keys (prefixes only)", operationId: 'listKeys' },
    })
    .post('/keys/create/', ({ principal, body, set }) => {
      set.status = 201
      return keys.create(principal, body)
    }, {
      scope: 'admin',
      body: CreateKeyBody,
      response: ok(ApiKeyCreated, 201),
      detail: { tags: ['Keys'], summary: 'Create a key with the same or fewer scopes', operationId: 'createKey' },
    })
    .post('/keys/:key_id/revoke/', ({ principal, params }) => keys.revoke(principal, params.key_id), {
      scope: 'admin',
      params: KeyIdParams,
      body: NoBody,
      response: ok(KeyListItem),
      errors: [404, 409],
      detail: { tags: ['Keys'], summary: 'Revoke a key (it fails on its next request)', operationId: 'revokeKey' },
    })
    .post('/keys/:key_id/rotate/', ({ principal, params }) => keys.rotate(principal, params.key_id), {
      scope: 'admin',
      params: KeyIdParams,
      body: NoBody,
      response: ok(ApiKeyCreated),
      errors: [404, 409],
      detail: { tags: ['Keys'], summary: 'Replace a key with a new one; the old one fails at once', operationId: 'rotateKey' },
    })
