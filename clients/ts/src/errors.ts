import type { ErrorCode } from "./types.js";

/** An error answer of pathd: the HTTP status and the stable `code` of its JSON body. */
export class PathdError extends Error {
  override readonly name = "PathdError";
  /** HTTP status (400, 404, 409, 503, ...). */
  readonly status: number;
  /** The stable machine-readable code, e.g. `map_not_found`, `version_conflict`. */
  readonly code: ErrorCode;
  /** Seconds from `Retry-After`, when the server sent one (503s). */
  readonly retryAfter: number | undefined;

  constructor(status: number, code: ErrorCode, message: string, retryAfter?: number) {
    super(`${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }

  /** Whether the server said to come back later (a 503 with `Retry-After`). */
  get retryable(): boolean {
    return this.status === 503 && this.retryAfter !== undefined;
  }
}

/** The request (or one attempt of it) took longer than its timeout. */
export class PathdTimeoutError extends Error {
  override readonly name = "PathdTimeoutError";
  constructor(readonly timeoutMs: number, readonly url: string) {
    super(`no answer from ${url} within ${timeoutMs} ms`);
  }
}

/** The connection failed (refused, reset) before an answer arrived. */
export class PathdConnectionError extends Error {
  override readonly name = "PathdConnectionError";
  constructor(readonly url: string, cause: unknown) {
    super(`cannot reach ${url}: ${String((cause as Error)?.message ?? cause)}`, { cause });
  }
}
