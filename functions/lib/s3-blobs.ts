import {
  CopyObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { BlobNotFoundError, DraftTooLargeError } from "../../shared/errors.js";
import type { BlobStore } from "../../shared/store/types.js";
import { awsErrorName, storeError } from "./table.js";

/** Where uploads arrive (the same prefix as `infra/layout.ts`, which derives IAM from it). */
export const DRAFTS_PREFIX = "drafts/";

export interface S3BlobStoreOptions {
  client: S3Client;
  bucket: string;
  /**
   * Objects under `prefix` are sized with HeadObject before they are read, and one over `maxBytes`
   * throws DraftTooLargeError without being downloaded. @default no limit
   */
  sizeLimit?: { prefix: string; maxBytes: number };
}

/** S3's answer when a conditional write finds the key taken (`If-None-Match: *`), HTTP 412. */
const PRECONDITION_FAILED = "PreconditionFailed";

/**
 * A missing key. The roles have no s3:ListBucket (it would let them list every key), so S3 answers
 * a read of a missing key with 403 rather than 404: on a key the role may read, that means missing.
 * A key the role may not read is equally unreadable to the run, and reported the same way.
 */
function isMissingKey(error: unknown): boolean {
  const name = awsErrorName(error);
  const status = (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata
    ?.httpStatusCode;
  return (
    name === "NoSuchKey" ||
    name === "NotFound" ||
    name === "AccessDenied" ||
    name === "Forbidden" ||
    status === 403 ||
    status === 404
  );
}

function isPreconditionFailed(error: unknown): boolean {
  const status = (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata
    ?.httpStatusCode;
  return awsErrorName(error) === PRECONDITION_FAILED || status === 412;
}

/**
 * The BlobStore on one S3 bucket; keys are object keys. Content type defaults to
 * `application/json`, which is what redraft writes. SDK errors become BlobNotFoundError,
 * StoreUnavailableError (throttled, 5xx) or StoreRequestFailedError.
 */
export class S3BlobStore implements BlobStore {
  readonly #s3: S3Client;
  readonly #bucket: string;
  readonly #sizeLimit: S3BlobStoreOptions["sizeLimit"];

  constructor(options: S3BlobStoreOptions) {
    this.#s3 = options.client;
    this.#bucket = options.bucket;
    this.#sizeLimit = options.sizeLimit;
  }

  async put(key: string, body: string, contentType?: string): Promise<void> {
    try {
      await this.#s3.send(new PutObjectCommand(this.#putInput(key, body, contentType)));
    } catch (error) {
      throw storeError(`put ${key}`, error);
    }
  }

  async get(key: string, version?: string): Promise<string> {
    try {
      const limit = this.#sizeLimit;
      if (limit && key.startsWith(limit.prefix)) {
        const { ContentLength } = await this.#s3.send(
          new HeadObjectCommand({ Bucket: this.#bucket, Key: key, ...(version && { VersionId: version }) }),
        );
        if (ContentLength !== undefined && ContentLength > limit.maxBytes) {
          throw new DraftTooLargeError(ContentLength, limit.maxBytes);
        }
      }
      const { Body } = await this.#s3.send(
        new GetObjectCommand({ Bucket: this.#bucket, Key: key, ...(version && { VersionId: version }) }),
      );
      if (!Body) throw new BlobNotFoundError(key);
      return await Body.transformToString("utf-8");
    } catch (error) {
      if (isMissingKey(error)) throw new BlobNotFoundError(key);
      throw storeError(`get ${key}`, error);
    }
  }

  /** S3's own conditional write (`If-None-Match: *`): two racing writers cannot both win. */
  async putIfAbsent(key: string, body: string, contentType?: string): Promise<boolean> {
    try {
      await this.#s3.send(
        new PutObjectCommand({ ...this.#putInput(key, body, contentType), IfNoneMatch: "*" }),
      );
      return true;
    } catch (error) {
      if (isPreconditionFailed(error)) return false;
      throw storeError(`putIfAbsent ${key}`, error);
    }
  }

  /** Copies an object inside the bucket without downloading it; BlobNotFoundError when `from` is missing. */
  async copy(from: string, to: string): Promise<void> {
    // CopySource is "bucket/key", URL-encoded per path segment.
    const source = [this.#bucket, ...from.split("/")].map(encodeURIComponent).join("/");
    try {
      await this.#s3.send(new CopyObjectCommand({ Bucket: this.#bucket, Key: to, CopySource: source }));
    } catch (error) {
      if (isMissingKey(error)) throw new BlobNotFoundError(from);
      throw storeError(`copy ${from} to ${to}`, error);
    }
  }

  #putInput(key: string, body: string, contentType: string | undefined) {
    return {
      Bucket: this.#bucket,
      Key: key,
      Body: body,
      ContentType: contentType ?? "application/json",
    };
  }
}
