import {
  type BedrockClient,
  CreateModelInvocationJobCommand,
  GetModelInvocationJobCommand,
  StopModelInvocationJobCommand,
} from "@aws-sdk/client-bedrock";
import { ErrorNames, ModelRequestFailedError } from "../../shared/errors.js";
import type {
  BatchJobStatus,
  BatchModelService,
  BatchRequestLine,
  BatchResult,
  BatchServiceLimits,
} from "../../shared/model/batch.js";
import { bedrockBatchRecord, bedrockBatchResults } from "../../shared/model/bedrock.js";
import { bedrockJobKeys } from "../../shared/store/bucket-layout.js";
import type { BlobStore } from "../../shared/store/types.js";

/**
 * Bedrock batch inference's quotas on one model invocation job, as AWS sets them by default
 * (adjustable per account in Service Quotas): at least 100 records, at most 50,000 records in the
 * input file, at most 1 GB of input file.
 */
export const BEDROCK_BATCH_LIMITS: BatchServiceLimits = {
  maxRequests: 50_000,
  // 1 GB read as 10^9 bytes, the smaller of its two readings.
  maxBytes: 1_000_000_000,
  minRequests: 100,
};

/** Job states after which nothing more happens: the output holds whatever was processed. */
const ENDED = new Set(["Completed", "PartiallyCompleted", "Failed", "Stopped", "Expired"]);

export interface BedrockBatchServiceOptions {
  client: BedrockClient;
  /** The bucket's blobs: the input file is written, the output file read, through them. */
  blobs: BlobStore;
  bucketName: string;
  /** The service role Bedrock assumes to read the input and write the output. */
  roleArn: string;
  /** A Bedrock model or inference-profile id. */
  model: string;
  /** @default BEDROCK_BATCH_LIMITS */
  limits?: BatchServiceLimits;
  /** Hours before Bedrock ends a job that has not finished (24 to 168). @default 24 */
  timeoutHours?: number;
}

/**
 * Batch-priced corrections on Amazon Bedrock batch inference: each round's requests as one JSONL
 * input file under `batch-jobs/<name>/`, a model invocation job (CreateModelInvocationJob, its name
 * also its idempotency token), polled with GetModelInvocationJob, stopped with
 * StopModelInvocationJob, its results read from the `.out` file Bedrock writes beside the input.
 */
export class BedrockBatchService implements BatchModelService {
  readonly provider = "bedrock";
  readonly model: string;
  readonly limits: BatchServiceLimits;

  constructor(private readonly options: BedrockBatchServiceOptions) {
    this.model = options.model;
    this.limits = options.limits ?? BEDROCK_BATCH_LIMITS;
  }

  requestBytes(line: BatchRequestLine): number {
    return Buffer.byteLength(bedrockBatchRecord(line, this.model)) + 1;
  }

  async submit(name: string, lines: readonly BatchRequestLine[]): Promise<string> {
    const { blobs, bucketName, client, roleArn } = this.options;
    const input = bedrockJobKeys.input(name);
    await blobs.put(
      input,
      lines.map((l) => `${bedrockBatchRecord(l, this.model)}\n`).join(""),
      "application/jsonl",
    );
    try {
      const job = await client.send(
        new CreateModelInvocationJobCommand({
          jobName: name,
          // The same name twice is one job: a retried submit starts nothing more.
          clientRequestToken: name,
          roleArn,
          modelId: this.model,
          inputDataConfig: {
            s3InputDataConfig: { s3Uri: `s3://${bucketName}/${input}`, s3InputFormat: "JSONL" },
          },
          outputDataConfig: {
            s3OutputDataConfig: { s3Uri: `s3://${bucketName}/${bedrockJobKeys.output(name)}` },
          },
          timeoutDurationInHours: this.options.timeoutHours ?? 24,
        }),
      );
      if (!job.jobArn) throw new Error("CreateModelInvocationJob returned no job ARN");
      return job.jobArn;
    } catch (error) {
      throw new ModelRequestFailedError(
        `bedrock batch job ${name} was refused: ${(error as Error).message}`,
        undefined,
        {
          cause: error,
        },
      );
    }
  }

  async status(jobArn: string): Promise<BatchJobStatus> {
    const job = await this.options.client.send(new GetModelInvocationJobCommand({ jobIdentifier: jobArn }));
    const status = job.status ?? "Unknown";
    return { ended: ENDED.has(status), status };
  }

  async results(jobArn: string): Promise<Map<string, BatchResult>> {
    const job = await this.options.client.send(new GetModelInvocationJobCommand({ jobIdentifier: jobArn }));
    const input = job.inputDataConfig?.s3InputDataConfig?.s3Uri ?? "";
    const output = job.outputDataConfig?.s3OutputDataConfig?.s3Uri ?? "";
    // Bedrock writes `<output>/<job id>/<input file name>.out`; the job id ends the ARN.
    const jobId = jobArn.slice(jobArn.lastIndexOf("/") + 1);
    const key = `${output.replace(`s3://${this.options.bucketName}/`, "")}${jobId}/${input.slice(input.lastIndexOf("/") + 1)}.out`;
    let text: string;
    try {
      text = await this.options.blobs.get(key);
    } catch (error) {
      // A job that failed as a whole wrote no output: every request is then without an answer.
      if ((error as Error).name === ErrorNames.BlobNotFound) return new Map();
      throw error;
    }
    return bedrockBatchResults(text, this.model);
  }

  async cancel(jobArn: string): Promise<void> {
    await this.options.client.send(new StopModelInvocationJobCommand({ jobIdentifier: jobArn }));
  }
}
