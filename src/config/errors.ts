/** Thrown when the environment cannot be turned into a configuration. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

/**
 * A zod issue's path as a JavaScript expression from the setting it is in:
 * `CHAINS[0].rpcUrl`, `CHAINS[1].entryPoints[2]`: the spelling an operator
 * finds in their JSON.
 */
export function issuePath(root: string, path: ReadonlyArray<PropertyKey>): string {
  return path.reduce<string>((text, key) => (typeof key === 'number' ? `${text}[${key}]` : `${text}.${String(key)}`), root)
}
