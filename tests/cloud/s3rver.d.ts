/** @20minutes/s3rver 4 ships JavaScript only; the part of its API the cloud tests use. */
declare module "@20minutes/s3rver" {
  interface S3rverOptions {
    port?: number;
    address?: string;
    silent?: boolean;
    directory: string;
    resetOnClose?: boolean;
    allowMismatchedSignatures?: boolean;
    configureBuckets?: { name: string }[];
  }
  export default class S3rver {
    constructor(options: S3rverOptions);
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
    /** Koa's middleware list: a function put first runs around every request. */
    middleware: ((ctx: never, next: () => Promise<void>) => Promise<void>)[];
    /** Koa is an EventEmitter; s3rver emits `event` with an S3 notification for each change. */
    on(event: "event", listener: (event: never) => void): void;
  }
}
