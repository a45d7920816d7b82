// The usage line and exit statuses of `attribution validate`: a module of their own, so the command's
// quickest path (--api, src/bin/validate-through-api.ts) loads no schema library for them.
export const validateUsage = 'validate <hash> [--type transaction|userOperation] [--chain <chainId>] [--api <url>]'

/** Exit statuses: 0 attributed; 1 found but not attributed, or not found; 64 bad input; 69 node unreachable. */
export const EXIT = { attributed: 0, notAttributed: 1, notFound: 1, usage: 64, unavailable: 69 } as const
