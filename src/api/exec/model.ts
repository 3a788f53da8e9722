import { t } from 'elysia'
import { Body, checkedByService, JsonInteger } from '../http/schemas'
import { CWD_PATTERN } from '../http/path-patterns'
import { EXEC_LIMITS, ExecResult } from '../../domain/exec'
export { ExecResult }

const L = EXEC_LIMITS

/**
 * The exec body. The schema gives the shape; sizes counted in UTF-8 bytes, variable names, NUL
 * characters and `cwd` are the service's to check (domain/exec/service.ts), with messages that
 * name the field. Character limits here are the byte limits: a string within them in bytes
 * passes them in characters.
 */
export const ExecBody = Body({
  command: t.Union([
    t.String({ minLength: 1, maxLength: L.commandBytes, description: 'A command line, run by `sh -c` (pipes, redirections, `&&` and variables work).', examples: ['composer install --no-dev'] }),
    t.Array(t.String({ maxLength: L.commandBytes }), { minItems: 1, maxItems: L.argvItems, description: 'An argv: the program and its arguments, run as they are (no shell).', examples: [['php', '-v']] }),
  ], {
    description: `What to run: an argv array (["php", "-v"]) or one string run by sh -c; at most ${L.commandBytes} bytes in UTF-8 (an argv's items together; at most ${L.argvItems} items), no NUL character.`,
    error: 'must be an argv array of strings such as ["php", "-v"], or one command line such as "composer install --no-dev" (run by sh -c)',
  }),
  cwd: t.Optional(t.String({
    maxLength: 4096,
    examples: ['public'],
    description: "The folder to start in: relative to the site's home (public), or absolute beneath /home/site (/home/site/public). An existing folder, resolved like the files API's paths (no '..', no symbolic link on the way); default the home.",
    ...checkedByService({ pattern: CWD_PATTERN }),
  })),
  env: t.Optional(t.Record(t.String(), t.String(), {
    description: `Variables added to the site's environment: at most ${L.envCount}, names of letters, digits and _ (not starting with a digit, at most ${L.envNameBytes} bytes, not starting with BERTH_), names and values at most ${L.envBytes} bytes together, no NUL character.`,
    examples: [{ APP_ENV: 'production' }],
  })),
  stdin: t.Optional(t.String({ description: `Text written to the command's standard input, which is then closed; at most ${L.stdinBytes} bytes in UTF-8 (else 413). Without it the input is empty (a program reading it sees its end at once).` })),
  timeout_seconds: t.Optional(JsonInteger({
    minimum: L.timeoutSeconds.minimum,
    maximum: L.timeoutSeconds.maximum,
    default: L.timeoutSeconds.default,
    description: `Seconds before the command and everything it started in its process group are killed (timed_out true, exit_code 137); ${L.timeoutSeconds.minimum} to ${L.timeoutSeconds.maximum}, default ${L.timeoutSeconds.default}.`,
  })),
})
