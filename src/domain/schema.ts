import { Type, type TSchema } from '@sinclair/typebox'

/**
 * Building blocks of the domain's views. The views are TypeBox schemas written once: the REST
 * door validates its answers and documents them (OpenAPI) from them, the MCP door gives them as
 * output schemas, and the TypeScript types of the services' results are derived from them.
 */
export const Uuid = (description?: string) => Type.String({ format: 'uuid', description })
export const DateTime = (description?: string) => Type.String({ format: 'date-time', description })
export const Nullable = <T extends TSchema>(s: T) => Type.Union([s, Type.Null()])
