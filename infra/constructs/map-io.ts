import { PolicyStatement } from "aws-cdk-lib/aws-iam";
import type { IBucket } from "aws-cdk-lib/aws-s3";
import { ResultWriterV2, S3JsonLItemReader } from "aws-cdk-lib/aws-stepfunctions";

/**
 * A Distributed Map's ItemReader and ResultWriter that grant their state machine only the prefix they
 * read or write. CDK's own grant each object of the bucket (`<bucket>/*`): a batch machine could
 * then read the drafts people upload and overwrite any run's evidence.
 */

/** Reads a JSONL item list that lies under `prefix` (its key is given at run time). */
export class PrefixedJsonLItemReader extends S3JsonLItemReader {
  readonly #objects: string;

  constructor(props: { bucket: IBucket; key: string; prefix: string }) {
    super({ bucket: props.bucket, key: props.key });
    this.#objects = props.bucket.arnForObjects(`${props.prefix}*`);
  }

  override providePolicyStatements(): PolicyStatement[] {
    return [new PolicyStatement({ actions: ["s3:GetObject"], resources: [this.#objects] })];
  }
}

/** Writes the Map's result files under `prefix` (a folder name, without its slash). */
export class PrefixedResultWriter extends ResultWriterV2 {
  readonly #objects: string;

  constructor(props: { bucket: IBucket; prefix: string }) {
    super({ bucket: props.bucket, prefix: props.prefix });
    this.#objects = props.bucket.arnForObjects(`${props.prefix}/*`);
  }

  /** The actions CDK's grant names (result files are multipart uploads), on the prefix alone. */
  override providePolicyStatements(): PolicyStatement[] {
    return [
      new PolicyStatement({
        actions: ["s3:PutObject", "s3:GetObject", "s3:ListMultipartUploadParts", "s3:AbortMultipartUpload"],
        resources: [this.#objects],
      }),
    ];
  }
}
