import { Type as t, type Static } from '@sinclair/typebox'
import { DateTime, Nullable } from '../schema'

export const SiteEnvVariable = t.Object({
  name: t.String(),
  value: Nullable(t.String({ description: "A plain variable's value; always null for a secret (never shown again once set)." })),
  secret: t.Boolean({ description: 'Kept encrypted at rest with a key of the box, masked in deployment output and logs.' }),
  readable: t.Boolean({
    description: 'false for a secret this box cannot open (its store was restored without the key it was sealed with): the app does not get it until it is set again.',
  }),
  length: Nullable(t.Integer({ description: "The value's length in characters; null for a secret that is not readable." })),
  last4: Nullable(t.String({ description: "A secret's last 4 characters when it is 20 characters or longer (to tell two tokens apart); null otherwise." })),
  updated_at: DateTime(),
})

export const SiteEnvLimits = t.Object({
  variables: t.Integer({ description: 'Variables a site may hold.' }),
  bytes: t.Integer({ description: 'Bytes of every name and value together.' }),
  value_bytes: t.Integer({ description: 'Bytes of one value.' }),
})

export const SiteEnv = t.Object({
  variables: t.Array(SiteEnvVariable, { description: 'By name.' }),
  count: t.Integer(),
  bytes: t.Integer({ description: 'UTF-8 bytes of every name and value, counted against limits.bytes.' }),
  limits: SiteEnvLimits,
  warning: Nullable(t.String({ description: 'null, or why some secrets are not readable and what to do.' })),
}, {
  examples: [{
    variables: [
      { name: 'DATABASE_URL', value: 'postgres://app@db.example.com/app', secret: false, readable: true, length: 33, last4: null, updated_at: '2026-11-24T12:00:00.000Z' },
      { name: 'STRIPE_SECRET_KEY', value: null, secret: true, readable: true, length: 32, last4: 'p7dc', updated_at: '2026-11-24T12:00:00.000Z' },
    ],
    count: 2,
    bytes: 94,
    limits: { variables: 200, bytes: 262144, value_bytes: 32768 },
    warning: null,
  }],
})

export type SiteEnvVariableView = Static<typeof SiteEnvVariable>
export type SiteEnvView = Static<typeof SiteEnv>
