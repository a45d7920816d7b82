/** The part of autocannon 9's programmatic API the benches use (the package ships no types). */
declare module 'autocannon' {
  type Histogram = { average: number; mean: number; stddev: number; min: number; max: number; p50: number; p90: number; p99: number; p97_5: number; total: number }
  export type Request = {
    method: string
    path: string
    headers?: Record<string, string>
    body?: string
    setupRequest?: (request: Request, context: Record<string, unknown>) => Request
  }
  type Options = {
    url: string
    connections?: number
    duration?: number
    method?: string
    headers?: Record<string, string>
    body?: string
    requests?: Request[]
    timeout?: number
  }
  type Result = {
    requests: Histogram
    latency: Histogram
    throughput: Histogram
    errors: number
    timeouts: number
    non2xx: number
    statusCodeStats: Record<string, { count: number }>
    duration: number
  }
  function autocannon(options: Options): Promise<Result>
  export default autocannon
}
