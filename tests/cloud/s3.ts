import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import S3rver from "@20minutes/s3rver";
import { S3Client } from "@aws-sdk/client-s3";

/** Credentials the local servers accept (s3rver checks none with allowMismatchedSignatures). */
export const LOCAL_CREDENTIALS = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };

export interface LocalS3 {
  endpoint: string;
  client: S3Client;
  close(): Promise<void>;
}

/** A request as the server's middleware sees it (s3rver is a Koa application). */
interface S3Request {
  method: string;
  querystring: string;
  status: number;
  set(header: string, value: string): void;
}

export interface S3Options {
  /** Runs around every request, first of the server's middleware. */
  around?: (ctx: S3Request, next: () => Promise<void>) => Promise<void>;
  /** Called as each object is created (s3rver's own notification, with the raw key). */
  onCreated?: (bucket: string, key: string) => void;
  /** Sockets of the client. @default the SDK's 50 */
  maxSockets?: number;
}

/**
 * An S3-compatible server from npm on a free loopback port, holding `bucket`. Its signature check
 * disagrees with the current SDK's, hence allowMismatchedSignatures; clients address it path-style.
 */
export async function startS3(bucket: string, options: S3Options = {}): Promise<LocalS3> {
  const directory = await mkdtemp(join(tmpdir(), "redraft-s3rver-"));
  const server = new S3rver({
    port: 0,
    address: "127.0.0.1",
    silent: true,
    directory,
    allowMismatchedSignatures: true,
    configureBuckets: [{ name: bucket }],
  });
  const { around, onCreated } = options;
  if (around) server.middleware.unshift(around);
  if (onCreated)
    server.on(
      "event",
      (event: {
        Records: { eventName: string; s3: { bucket: { name: string }; object: { key: string } } }[];
      }) => {
        for (const record of event.Records)
          if (record.eventName.startsWith("ObjectCreated:"))
            onCreated(record.s3.bucket.name, record.s3.object.key);
      },
    );
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: LOCAL_CREDENTIALS,
    ...(options.maxSockets && { requestHandler: { httpAgent: { maxSockets: options.maxSockets } } }),
  });
  return {
    endpoint,
    client,
    async close() {
      client.destroy();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
