/**
 * The part of autocannon 8's programmatic API that the benchmarks use. autocannon ships no types,
 * and @types/autocannon describes 7.x; declaring only what we call keeps the dependency list short
 * and lets tsc check our use of it.
 */
declare module 'autocannon' {
  export interface Options {
    url: string;
    method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    /** Seconds. */
    duration?: number;
    /** Seconds before a request counts as a timeout. */
    timeout?: number;
    /** A run whose results are discarded, before the measured one. */
    warmup?: { connections?: number; duration?: number };
    /** Requests in turn on each connection; `setupRequest` builds each one as it is sent. */
    requests?: Request[];
    /** Stop after this many responses instead of after `duration`. */
    amount?: number;
    /** Milliseconds between samples; the run ends at the first sample after its last response. */
    sampleInt?: number;
  }

  /** What `setupRequest` receives and returns: the request about to be sent (falsy: none). */
  export interface RequestParams {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
  }

  export interface Request extends RequestParams {
    setupRequest?: (request: RequestParams, context: Record<string, unknown>) => RequestParams;
    /** Called with each response to this request (the body as text). */
    onResponse?: (status: number, body: string, context: Record<string, unknown>) => void;
  }

  /** Percentiles are keyed `p50`, `p97_5`, `p99`, ... */
  export interface Histogram {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    p50: number;
    p90: number;
    p99: number;
    total?: number;
  }

  export interface Result {
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    resets: number;
    '2xx': number;
    statusCodeStats: Record<string, { count: number }>;
    /** Milliseconds. */
    latency: Histogram;
    /** Completed requests per one-second sample; `total` is the count over the run. */
    requests: Histogram & { sent: number };
  }

  export default function autocannon(options: Options): Promise<Result>;
}
