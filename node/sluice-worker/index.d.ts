// Types for sluice-worker. See README.md for the contract with sluice.

import type { IncomingMessage, RequestListener, Server, ServerOptions, ServerResponse } from 'node:http';

export type Priority = 'critical-plus' | 'critical' | 'sheddable-plus' | 'sheddable';

/** What sluice says about a request, as req.sluice. Malformed headers read as undefined. */
export interface RequestInfo {
  /** Sluice-Timeout: the request's remaining budget in ms when sluice dispatched it. */
  readonly timeoutMs: number | undefined;
  /** Date.now()-based ms at which the budget runs out; undefined without Sluice-Timeout. */
  readonly deadline: number | undefined;
  /** Sluice-Priority. */
  readonly priority: Priority | undefined;
  /**
   * Aborts at the deadline (reason: a TimeoutError DOMException), or when the
   * connection closes before the response is complete (an AbortError).
   * Made on first read only.
   */
  readonly signal: AbortSignal;
}

declare module 'node:http' {
  interface IncomingMessage {
    /** Set by sluice-worker's wrap() or attach() before the handler runs. */
    sluice?: RequestInfo;
  }
}

export interface Meter {
  /**
   * The event loop's utilization in [0, 1] over the latest interval of at least windowMs.
   * A read closes an interval that has reached windowMs; wrap() and attach() read the meter
   * when a request arrives as well as when its response's headers are written.
   */
  read(): number;
  readonly windowMs: number;
}

export interface MeterOptions {
  /** The shortest interval the utilization is taken over; default 100 ms. */
  windowMs?: number;
  /** The source of {idle, active} readings; default perf_hooks' performance.eventLoopUtilization. */
  eventLoopUtilization?: () => { idle: number; active: number };
}

export interface WrapOptions {
  /** The readiness path answered by the helper; default '/healthz'; false: the handler answers it. */
  readyPath?: string | false | null;
  /** Saturation window in ms; default 100 (the process's shared meter). */
  windowMs?: number;
  /** A meter of your own, instead of windowMs. */
  meter?: Meter;
  /** Headers set on every response before the handler runs (the handler may change them). */
  headers?: Record<string, string | number | readonly string[]>;
}

export interface AttachOptions extends WrapOptions {
  /** Signals that start a drain; default ['SIGTERM', 'SIGINT']; false for none. */
  signals?: NodeJS.Signals[] | false;
  /** Exit 0 after a signal's drain, 1 if it timed out; default true. */
  exit?: boolean;
  /** How long a drain waits for requests in flight; default 30000 ms. */
  drainTimeoutMs?: number;
  /** Where the helper's few lines go; default stderr; false for nowhere. */
  log?: ((message: string) => void) | false | null;
}

export interface ListenOptions {
  /** A port on host, over PORT and SLUICE_SOCKET. */
  port?: number | string;
  /** Default '127.0.0.1'. */
  host?: string;
  /** A unix socket path, over everything else. */
  socket?: string;
  /** Where PORT and SLUICE_SOCKET are read; default process.env. */
  env?: Record<string, string | undefined>;
}

export interface ServeOptions extends AttachOptions, ListenOptions {
  /** Passed to http.createServer. */
  server?: ServerOptions;
}

export function serve(handler: RequestListener, options?: ServeOptions): Server;
export function wrap<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse<Req> = ServerResponse<Req>>(
  handler: (req: Req, res: Res) => unknown, options?: WrapOptions): (req: Req, res: Res) => unknown;
export function attach<S extends Server>(server: S, options?: AttachOptions): S;
/** Resolves with "host:port" or the socket path. */
export function listen(server: Server, options?: ListenOptions): Promise<string>;
export function drain(server: Server): Promise<void>;
export function draining(server: Server): boolean;
export function saturation(): number;
export function createMeter(options?: MeterOptions): Meter;

export const SATURATION_HEADER: 'Sluice-Saturation';
export const TIMEOUT_HEADER: 'Sluice-Timeout';
export const PRIORITY_HEADER: 'Sluice-Priority';
export const PRIORITIES: Priority[];
export const DEFAULT_READY_PATH: string;
export const DEFAULT_WINDOW_MS: number;
export const DEFAULT_DRAIN_TIMEOUT_MS: number;
