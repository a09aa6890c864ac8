import {
  CopyObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  PutObjectTaggingCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { RETENTION_TAG, RetentionTagValues, STANDARD_TAGGING } from "../../contracts/retention.js";
import { awsErrorName, storeError } from "../../contracts/table.js";
import { BlobNotFoundError, DraftTooLargeError, InvalidDraftError } from "../../shared/errors.js";
import type { BlobStore } from "../../shared/store/types.js";
import { decodeText } from "../../shared/text-encoding.js";

export interface S3BlobStoreOptions {
  client: S3Client;
  bucket: string;
  /**
   * Uploads (objects under `prefix`) are sized with HeadObject before they are read, and one over
   * `maxBytes` throws DraftTooLargeError without being downloaded. A 403 on an upload means it is
   * not there (see {@link isMissingKey}). An upload's bytes are read as a draft file's are: UTF-8,
   * or UTF-16 when a byte-order mark says so; any other encoding throws InvalidDraftError naming the
   * key. @default no uploads prefix: every read is a plain GET
   */
  uploads?: { prefix: string; maxBytes: number };
  /**
   * Other prefixes where people put their own text files (`sources/`, `batches/`): read as uploads
   * are, as UTF-8 or marked UTF-16, another encoding refused (InvalidDraftError naming the key).
   * Objects redraft wrote itself are read as the UTF-8 it wrote. @default none
   */
  textPrefixes?: readonly string[];
}

/** S3's answer when a conditional write finds the key taken (`If-None-Match: *`), HTTP 412. */
const PRECONDITION_FAILED = "PreconditionFailed";

function isMissingKey(error: unknown): boolean {
  const name = awsErrorName(error);
  return name === "NoSuchKey" || name === "NotFound";
}

/**
 * A missing upload. No role has s3:ListBucket (it would let it list every key), so S3 answers a
 * read of a missing key with 403 rather than 404; Validate may read every key under `drafts/`, so
 * a 403 there means the upload is not there: bad input, not a system fault.
 */
function isMissingUpload(error: unknown): boolean {
  const status = (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata
    ?.httpStatusCode;
  const name = awsErrorName(error);
  return isMissingKey(error) || name === "AccessDenied" || name === "Forbidden" || status === 403;
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
  readonly #uploads: S3BlobStoreOptions["uploads"];
  readonly #textPrefixes: readonly string[];

  constructor(options: S3BlobStoreOptions) {
    this.#s3 = options.client;
    this.#bucket = options.bucket;
    this.#uploads = options.uploads;
    this.#textPrefixes = options.textPrefixes ?? [];
  }

  async put(key: string, body: string, contentType?: string): Promise<void> {
    try {
      await this.#s3.send(new PutObjectCommand(this.#putInput(key, body, contentType)));
    } catch (error) {
      throw storeError(`put ${key}`, error);
    }
  }

  async get(key: string, version?: string): Promise<string> {
    const uploads = this.#uploads;
    const upload = uploads !== undefined && key.startsWith(uploads.prefix);
    const persons = upload || this.#textPrefixes.some((prefix) => key.startsWith(prefix));
    let bytes: Uint8Array;
    try {
      if (upload) {
        const { ContentLength } = await this.#s3.send(
          new HeadObjectCommand({ Bucket: this.#bucket, Key: key, ...(version && { VersionId: version }) }),
        );
        if (ContentLength !== undefined && ContentLength > uploads.maxBytes) {
          throw new DraftTooLargeError(ContentLength, uploads.maxBytes);
        }
      }
      const { Body } = await this.#s3.send(
        new GetObjectCommand({ Bucket: this.#bucket, Key: key, ...(version && { VersionId: version }) }),
      );
      if (!Body) throw new BlobNotFoundError(key);
      if (!persons) return await Body.transformToString("utf-8");
      bytes = await Body.transformToByteArray();
    } catch (error) {
      if (upload ? isMissingUpload(error) : isMissingKey(error)) throw new BlobNotFoundError(key);
      throw storeError(`get ${key}`, error);
    }
    // An upload (a source, a manifest) is a person's file, read as a draft file is offline
    // (shared/text-encoding.ts): one in Latin-1 is refused naming its first byte that is not UTF-8,
    // never checked with U+FFFD in its place.
    const decoded = decodeText(bytes);
    if ("problem" in decoded) throw new InvalidDraftError(`${key} ${decoded.problem}`);
    return decoded.text;
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

  /**
   * Marks every object under `prefix` and each of `keys` for the lifecycle: `review` keeps them
   * (a run awaiting a person), `standard` lets them expire again. Idempotent.
   */
  async retain(
    prefix: string,
    keys: readonly string[],
    value: keyof typeof RetentionTagValues,
  ): Promise<void> {
    const all = [...keys];
    let token: string | undefined;
    try {
      do {
        const page = await this.#s3.send(
          new ListObjectsV2Command({
            Bucket: this.#bucket,
            Prefix: prefix,
            ...(token && { ContinuationToken: token }),
          }),
        );
        for (const object of page.Contents ?? []) if (object.Key) all.push(object.Key);
        token = page.NextContinuationToken;
      } while (token);
      for (const key of new Set(all)) {
        await this.#s3.send(
          new PutObjectTaggingCommand({
            Bucket: this.#bucket,
            Key: key,
            Tagging: { TagSet: [{ Key: RETENTION_TAG, Value: RetentionTagValues[value] }] },
          }),
        );
      }
    } catch (error) {
      throw storeError(`retain ${prefix}`, error);
    }
  }

  #putInput(key: string, body: string, contentType: string | undefined) {
    return {
      Bucket: this.#bucket,
      Key: key,
      Body: body,
      ContentType: contentType ?? "application/json",
      // Only tagged objects expire (see retention.ts): everything redraft writes starts standard.
      Tagging: STANDARD_TAGGING,
    };
  }
}
