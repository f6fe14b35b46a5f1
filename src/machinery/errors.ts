/**
 * ApiError carries a gRPC status code with a human message. Every layer throws it (or a plain Error,
 * which the transport maps to Internal) so the API edge never has to guess what went wrong.
 */
export enum Code {
  OK = 0,
  Canceled = 1,
  Unknown = 2,
  InvalidArgument = 3,
  DeadlineExceeded = 4,
  NotFound = 5,
  AlreadyExists = 6,
  PermissionDenied = 7,
  ResourceExhausted = 8,
  FailedPrecondition = 9,
  Aborted = 10,
  OutOfRange = 11,
  Unimplemented = 12,
  Internal = 13,
  Unavailable = 14,
  DataLoss = 15,
  Unauthenticated = 16,
}

export class ApiError extends Error {
  constructor(
    readonly code: Code,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export const invalidArgument = (msg: string) => new ApiError(Code.InvalidArgument, msg);
export const notFound = (msg: string) => new ApiError(Code.NotFound, msg);
export const failedPrecondition = (msg: string) => new ApiError(Code.FailedPrecondition, msg);
export const unimplemented = (msg: string) => new ApiError(Code.Unimplemented, msg);
export const permissionDenied = (msg = "not authorized") => new ApiError(Code.PermissionDenied, msg);
export const alreadyExists = (msg: string) => new ApiError(Code.AlreadyExists, msg);
export const internal = (msg: string) => new ApiError(Code.Internal, msg);
export const unavailable = (msg: string) => new ApiError(Code.Unavailable, msg);
