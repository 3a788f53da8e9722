declare module '*.toml' {
  const value: Record<string, unknown>
  export default value
}

declare module '*.sh' {
  const text: string
  export default text
}
