import type { Logger } from '../logger.js'

/**
 * A promise rejected with no handler, or an exception nothing caught, is a
 * bug. Node would end the process printing the raw error on stderr: no log
 * line for a collector to find, and a message (a connection string in a
 * driver's error, say) that never passed the logger's redaction of secrets.
 * The process still ends — one in an unknown state must not go on indexing,
 * a supervisor restarts it and a restart resumes where it stopped — but its
 * last line says why, through the logger.
 */
export function exitOnUnhandled(logger: Logger, exitWith: (code: number, line: () => void) => void): void {
  const fatal = (what: string) => (error: unknown) => exitWith(1, () => logger.fatal({ err: error }, `${what} (a bug): exiting`))
  process.on('unhandledRejection', fatal('a promise rejected with no handler'))
  process.on('uncaughtException', fatal('an exception nothing caught'))
}
