import { Elysia } from 'elysia'
import { ok } from '../http/schemas'
import { ApiKeyCreated } from '../keys/model'
import type { ApiPlugins } from '../plugins'
import { RegisterBody, Whoami } from './model'
import type { AuthService } from '../../domain/auth'

export const authRoutes = (plugins: ApiPlugins, auth: AuthService) =>
  new Elysia({ name: 'auth-routes' })
    .use(plugins)
    .post('/auth/register/', ({ body, set }) => {
      set.status = 201
      return auth.register(body)
    }, {
      public: true,
      rateLimit: 'register',
      body: RegisterBody,
      response: ok(ApiKeyCreated, 201),
      detail: { tags: ['Identity'], summary: 'Register an account and get its first key (read, write, admin)', operationId: 'register' },
    })
    .get('/auth/whoami/', ({ principal }) => auth.whoami(principal), {
      scope: 'read',
      response: ok(Whoami),
      detail: { tags: ['Identity'], summary: 'Who this key belongs to', operationId: 'whoami' },
    })
