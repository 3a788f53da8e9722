import type { TLiteral, TUnion } from '@sinclair/typebox'
import { t, type Static } from 'elysia'

/**
 * The fixed vocabularies of the product, each written once as a schema (validation, OpenAPI,
 * TypeScript types) with its list of values derived from it for config checks and CLI help.
 * Written as explicit unions of literals: Elysia infers route types from these, not from a
 * union built by mapping over an array.
 */
export const TrackSchema = t.Union([t.Literal('single_site'), t.Literal('agency')])
export const HostingTypeSchema = t.Union([t.Literal('shared'), t.Literal('vps'), t.Literal('dedicated')])
export const AiModuleSchema = t.Union([t.Literal('chatbot'), t.Literal('seo'), t.Literal('translation'), t.Literal('content')])
export const ScopeSchema = t.Union([t.Literal('read'), t.Literal('write'), t.Literal('admin')])

export type Track = Static<typeof TrackSchema>
export type HostingType = Static<typeof HostingTypeSchema>
export type AiModule = Static<typeof AiModuleSchema>
export type Scope = Static<typeof ScopeSchema>

/** The values of a union of literals, in order. */
export const valuesOf = <T extends string>(schema: TUnion<TLiteral<T>[]>): T[] => schema.anyOf.map((s) => s.const)

export const TRACKS = valuesOf(TrackSchema)
export const HOSTING_TYPES = valuesOf(HostingTypeSchema)
export const AI_MODULES = valuesOf(AiModuleSchema)
export const SCOPES = valuesOf(ScopeSchema)
