import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox'
import { SLUG_PATTERN } from '../../core/slugs'
import type { AgentInfo } from '../../drivers/cluster/types'
import type { DiskUsage } from '../../drivers/files/disk-usage'
import type { SiteFirewallPolicy } from '../../drivers/firewall/types'
import { HOME_OPS, MAX_CALL_BYTES } from './home-wire'

/**
 * The node agent's API (`https://{address}:{agentPort}`, mutual TLS: docs/cluster.md), one entry
 * per route: its method, path, parameters, query, headers, body and answer, in TypeBox. The
 * agent's router (server/router.ts) is made from this table and checks every request against
 * it (a request it refuses is a 400 naming the field); the control plane's client
 * (client/calls.ts: AgentLink's callers, the remote home) builds every request from it and
 * refuses to send one the agent would refuse. No path is written anywhere else.
 *
 * A body or an answer is JSON (its schema), a byte stream (its content type), or nothing.
 */
export interface AgentRoute {
  method: 'GET' | 'PUT' | 'POST' | 'DELETE'
  /** Segments; `:name` is a parameter, its value in `params`. */
  path: string
  summary: string
  params: TObject
  query: TObject
  /** The request's headers the route reads (lower case). */
  headers: TObject
  body: Payload
  answer: Payload
}

export type Payload =
  | { kind: 'json'; schema: TSchema; /** The most bytes of JSON the agent reads (default JSON_BODY_BYTES). */ maxBytes?: number }
  | { kind: 'stream'; contentType: string }
  | { kind: 'none' }

/** The most bytes of a JSON body the agent reads, unless its route says. */
export const JSON_BODY_BYTES = 1024 * 1024

const none = { kind: 'none' } as const
const json = <S extends TSchema>(schema: S, maxBytes?: number) => ({ kind: 'json' as const, schema, ...(maxBytes ? { maxBytes } : {}) })
const stream = <C extends string>(contentType: C) => ({ kind: 'stream' as const, contentType })
const empty = Type.Object({}, { additionalProperties: false })
const strict = <P extends Parameters<typeof Type.Object>[0]>(props: P) => Type.Object(props, { additionalProperties: false })

/** A site's slug, as the spec names sites (core/slugs.ts: 3 to 50 characters). */
const Slug = Type.String({ pattern: SLUG_PATTERN, description: 'a site slug: 3 to 50 lowercase letters, digits and hyphens' })
/** A volume name as Docker allows it; the agent serves Berth's site volumes of its engine only. */
const Volume = Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$', description: 'a Docker volume name' })
const Port = Type.Integer({ minimum: 1, maximum: 65535 })
const Ipv4 = Type.String({ maxLength: 15 })
const Ports = Type.Array(Port, { maxItems: 1024 })

/** SiteFirewallPolicy's shape; drivers/firewall/policy.ts checks the values (CIDR, order) after it. */
const FirewallPolicy = strict({
  pool: Type.String({ maxLength: 43 }),
  publicEdge: Type.Union([Type.Null(), strict({ address: Ipv4, ports: Ports })]),
  guardedHost: Type.Optional(Type.Union([Type.Null(), strict({ address: Ipv4, openPorts: Ports })])),
  closedPorts: Type.Optional(Type.Union([Type.Null(), strict({ tcp: Ports, udp: Ports })])),
  blockedHosts: Type.Optional(Type.Union([Type.Null(), Type.Array(Ipv4, { maxItems: 4096 })])),
  refusedTcpPorts: Type.Optional(Type.Union([Type.Null(), Ports])),
})

const Info = Type.Object({
  nodeId: Type.String(),
  swarmNodeId: Type.Union([Type.String(), Type.Null()]),
  memoryBytes: Type.Number(),
  cpus: Type.Number(),
  version: Type.String(),
  engineVersion: Type.String(),
  instance: Type.Optional(Type.String()),
  firewall: Type.Optional(Type.Union([Type.Null(), FirewallPolicy])),
})

const HomeCall = strict({
  op: Type.Union(HOME_OPS.map((op) => Type.Literal(op))),
  args: Type.Array(Type.Unknown(), { maxItems: 4 }),
  owner: strict({ uid: Type.Integer({ minimum: 0 }), gid: Type.Integer({ minimum: 0 }) }),
})
const VolumeParams = strict({ volume: Volume })
/** Names at the root of the home an archive leaves out, comma-separated (home-wire.ts, keepQuery). */
const KeepQuery = strict({ keep: Type.Optional(Type.String({ maxLength: 4096 })) })

type Defaults = { params: typeof empty; query: typeof empty; headers: typeof empty; body: typeof none; answer: typeof none }

/** A route: what `r` says, and no params, query, headers, body or answer where it says none. */
function route<R extends Partial<AgentRoute> & Pick<AgentRoute, 'method' | 'path' | 'summary'>>(r: R): Omit<Defaults, keyof R> & R {
  return { params: empty, query: empty, headers: empty, body: none, answer: none, ...r } as Omit<Defaults, keyof R> & R
}

export const AGENT_ROUTES = {
  info: route({
    method: 'GET', path: '/v1/info', answer: json(Info),
    summary: "The node: its ids, memory, CPUs, versions, this process's instance and the site firewall it keeps.",
  }),
  setFirewall: route({
    method: 'PUT', path: '/v1/firewall',
    body: json(strict({ policy: Type.Union([Type.Null(), FirewallPolicy]) })),
    answer: json(strict({ state: Type.Union([Type.String(), Type.Null()]) })),
    summary: 'The site firewall the node keeps from now on (null: none), written to node.json; the state its rules were found in.',
  }),
  openForward: route({
    method: 'PUT', path: '/v1/forwards/:slug', params: strict({ slug: Slug }),
    body: json(strict({ address: Type.String({ maxLength: 45 }), port: Port })),
    answer: json(strict({ port: Port })),
    summary: "A TCP port on the node's private address forwarding the control plane's connections to the site's container; idempotent.",
  }),
  closeForward: route({
    method: 'DELETE', path: '/v1/forwards/:slug', params: strict({ slug: Slug }),
    summary: "Closes the site's forward and every connection through it (204).",
  }),
  homeCall: route({
    method: 'POST', path: '/v1/homes/:volume/call', params: VolumeParams,
    body: json(HomeCall, MAX_CALL_BYTES), answer: json(strict({ result: Type.Unknown() })),
    summary: "One operation of the site's home (home-wire.ts), run by SiteHome on the volume's folder.",
  }),
  homeFile: route({
    method: 'GET', path: '/v1/homes/:volume/file', params: VolumeParams,
    query: strict({ path: Type.String() }),
    headers: Type.Object({ range: Type.Optional(Type.String({ pattern: '^bytes=(\\d+-\\d*|-\\d+)$', description: 'bytes=A-B or bytes=-N' })) }),
    answer: stream('application/octet-stream'),
    summary: "A regular file's bytes (streamed, 200), or the range asked (206); x-file-size and x-range-start say where they are.",
  }),
  homeTar: route({
    method: 'GET', path: '/v1/homes/:volume/tar', params: VolumeParams, query: KeepQuery,
    answer: stream('application/x-tar'),
    summary: 'The home as an uncompressed tar, streamed as GNU tar writes it (cut short if tar fails).',
  }),
  replaceHome: route({
    method: 'PUT', path: '/v1/homes/:volume/tar', params: VolumeParams, query: KeepQuery,
    body: stream('application/x-tar'), answer: json(strict({ result: Type.Null() })),
    summary: 'Replaces the home with the tar streamed as the body (streamed to disk on the node, then replaceHome).',
  }),
  homeUsage: route({
    method: 'GET', path: '/v1/homes/:volume/usage', params: VolumeParams,
    answer: json(strict({ result: strict({ bytes: Type.Number(), complete: Type.Boolean() }) })),
    summary: "The home's disk usage, measured on the node.",
  }),
} as const

/**
 * What the agent carries besides its API, declared here so that every door of the agent is in
 * one place: not HTTP routes, so no router serves them, but their ports and content are part of
 * the contract as much as the routes are.
 */
export const AGENT_STREAMS = {
  engine: {
    port: 'agentPort + 1',
    protocol: "TLS with the same mutual certificates; each connection piped byte for byte to the node's Docker socket (server/engine-proxy.ts)",
    contentType: 'application/vnd.docker.raw-stream',
    carries: "the Docker API: exec and attach (the consoles' terminals, hijacked), events, archives, image loads",
  },
  forward: {
    port: "openForward's answer, one per site",
    protocol: "plain TCP from the control address only, piped to the site container's web port (a DNAT rule in the kernel, server/kernel-forwards.ts)",
    contentType: 'application/octet-stream',
    carries: "the edge's HTTP/1.1 connections to the site",
  },
} as const

export type AgentRoutes = typeof AGENT_ROUTES
export type AgentRouteName = keyof AgentRoutes

type IsEmpty<T> = keyof T extends never ? true : false
type Part<Key extends string, S extends TSchema> = IsEmpty<Static<S>> extends true ? { [k in Key]?: Static<S> } : { [k in Key]: Static<S> }
type BodyOf<P> = P extends { kind: 'json'; schema: infer S extends TSchema } ? { body: Static<S> } : P extends { kind: 'stream' } ? { body: BodyInit } : { body?: undefined }

/** What the client gives to send route K: its params, query, headers and body, as the contract types them. */
export type AgentRequest<K extends AgentRouteName> = Part<'params', AgentRoutes[K]['params']> & Part<'query', AgentRoutes[K]['query']> & Part<'headers', AgentRoutes[K]['headers']> & BodyOf<AgentRoutes[K]['body']>

/** Route K's answer: its JSON, nothing, or the Response whose body is the stream. */
export type AgentAnswer<K extends AgentRouteName> = AgentRoutes[K]['answer'] extends { kind: 'json'; schema: infer S extends TSchema } ? Static<S> : AgentRoutes[K]['answer'] extends { kind: 'stream' } ? Response : void

/** Route K's request as the router hands it to its handler, checked. */
export interface CheckedRequest<K extends AgentRouteName> {
  params: Static<AgentRoutes[K]['params']>
  query: Static<AgentRoutes[K]['query']>
  headers: Static<AgentRoutes[K]['headers']>
  body: AgentRoutes[K]['body'] extends { kind: 'json'; schema: infer S extends TSchema } ? Static<S> : AgentRoutes[K]['body'] extends { kind: 'stream' } ? ReadableStream<Uint8Array> | null : undefined
  request: Request
}

// The contract's schemas and the types the rest of Berth uses are the same, both ways.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
const agreed: [Same<Static<typeof Info>, AgentInfo>, Same<Static<typeof FirewallPolicy>, SiteFirewallPolicy>, Same<Static<typeof AGENT_ROUTES.homeUsage.answer.schema>['result'], DiskUsage>] = [true, true, true]
void agreed
