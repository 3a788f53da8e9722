#!/usr/bin/env bun
import { runCli } from './cli'

// The only place that reads the process's environment and arguments; everything else gets them.
const code = await runCli(process.argv.slice(2), process.env)
process.exit(code)
