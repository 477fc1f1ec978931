/**
 * The error family services throw. `http/errors.ts` renders them; nothing below the HTTP layer knows about
 * responses. `detail` is one sentence for a human and never carries a secret.
 */
export type FieldError = { path: string; message: string };

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly detail?: string,
    readonly errors?: FieldError[],
    readonly headers?: Record<string, string>,
  ) {
    super(detail ?? `status ${status}`);
  }
}

export const unauthorized = (detail = "A valid X-API-KEY header is required.") => new AppError(401, detail);
export const forbidden = (detail: string, headers?: Record<string, string>) => new AppError(403, detail, undefined, headers);
export const notFound = (what: string) => new AppError(404, `${what} does not exist.`);
export const conflict = (detail: string) => new AppError(409, detail);
export const tooLarge = (detail: string) => new AppError(413, detail);
export const unprocessable = (detail: string, errors?: FieldError[]) => new AppError(422, detail, errors);
export const locked = (detail: string) => new AppError(423, detail);
export const unavailable = (detail: string) => new AppError(503, detail, undefined, { "retry-after": "5" });

/**
 * The database cannot be written now: its disk is full, its file system is read-only, or it fails with I/O errors.
 * The store maps its backend's errors to this one, so services and the delivery worker never see a backend's codes.
 * `reason` names the cause in a few words ("disk full"); `underlying` is the backend's own message, for the log.
 */
export class StorageUnavailable extends AppError {
  constructor(readonly reason: string, readonly underlying?: string) {
    super(503, `The database cannot be written now (${reason}); try again later.`, undefined, { "retry-after": "5" });
  }
}

/** The queue's schema changed between validating a message and storing it; the publisher checks again. */
export class SchemaChanged extends AppError {
  constructor() {
    super(409, "The queue's schema changed while the message was being published; publish it again.");
  }
}

/** A listener's filter changed between judging a message and storing it (PostgreSQL); the store judges it again. */
export class FiltersChanged extends AppError {
  constructor() {
    super(503, "The queue's listener filters kept changing while the message was being published; publish it again.", undefined, { "retry-after": "1" });
  }
}
