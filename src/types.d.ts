declare module '*.toml' {
  const value: Record<string, unknown>
  export default value
}

declare module '*.sh' {
  const text: string
  export default text
}

// The console page's assets, embedded as text (src/console/assets.ts).
declare module '*.css' {
  const text: string
  export default text
}

declare module '*/client.js' {
  const text: string
  export default text
}

declare module '@xterm/xterm/lib/xterm.js' {
  const text: string
  export default text
}

declare module '@xterm/addon-fit/lib/addon-fit.js' {
  const text: string
  export default text
}
