/** Thrown when the environment cannot be turned into a configuration. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}
