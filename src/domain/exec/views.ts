import { Type as t, type Static } from '@sinclair/typebox'
import { EXEC_LIMITS } from './limits'

export const ExecResult = t.Object({
  exit_code: t.Integer({ description: "The command's exit code; 137 (128 + SIGKILL) when it was killed at its timeout.", examples: [0] }),
  stdout: t.String({ description: `Its standard output as UTF-8 text (invalid bytes as U+FFFD), the last ${EXEC_LIMITS.keepBytes} bytes of it.` }),
  stderr: t.String({ description: `Its standard error, kept as stdout is (the last ${EXEC_LIMITS.keepBytes} bytes).` }),
  truncated: t.Boolean({ description: 'True when stdout or stderr was longer than it keeps and lost its beginning.' }),
  duration_ms: t.Integer({ description: 'From its start to its end, in milliseconds.' }),
  timed_out: t.Boolean({ description: 'True when it was still running at timeout_seconds and was killed with its whole process group.' }),
})
export type ExecResult = Static<typeof ExecResult>
