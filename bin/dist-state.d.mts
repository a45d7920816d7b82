// Types of dist-state.mjs, for the TypeScript that imports it (bench/cli.bench.ts).
export declare const root: string
export declare const builtStamp: string
export declare function distState(): 'fresh' | 'missing' | 'stale'
