import { Duration, RemovalPolicy } from "aws-cdk-lib";
import {
  AttributeType,
  BillingMode,
  type ITable,
  ProjectionType,
  Table,
  TableEncryption,
} from "aws-cdk-lib/aws-dynamodb";
import {
  BlockPublicAccess,
  Bucket,
  BucketEncryption,
  type IBucket,
  ObjectOwnership,
} from "aws-cdk-lib/aws-s3";
import { Construct } from "constructs";
import { RETENTION_TAG, RetentionTagValues } from "../../contracts/retention.js";
import { INDEX_PROJECTION, INDEXES, PARTITION_KEY, SORT_KEY, TTL_ATTRIBUTE } from "../../contracts/table.js";
import {
  BATCH_ITEMS_PREFIX,
  BATCH_RESULTS_PREFIX,
  BATCHES_PREFIX,
  BEDROCK_JOBS_PREFIX,
  DRAFTS_PREFIX,
  RESULTS_PREFIX,
  RUNS_PREFIX,
} from "../../shared/store/bucket-layout.js";

export interface StorageProps {
  /** `destroy` empties and deletes the bucket and table with the stack; `retain` keeps both. */
  readonly removalPolicy: "destroy" | "retain";
  /**
   * Days a run's objects are kept: uploads under `drafts/`, attempts under `runs/` and published
   * drafts under `results/` expire this long after they were written, and a version that was
   * overwritten or deleted this long after it stopped being current. The table's `ttl` (written
   * by the store, see `contracts/table.ts`) uses the same number.
   */
  readonly retentionDays: number;
  /** A team's own bucket (see RedraftProps.existingBucket): no drafts or access-logs bucket is created. */
  readonly existingBucket?: IBucket | undefined;
  /** A team's own table (see RedraftProps.existingTable): no table is created. */
  readonly existingTable?: ITable | undefined;
}

/** The prefixes whose objects expire with the run; the access logs have their own rule. */
export const RETAINED_PREFIXES = [DRAFTS_PREFIX, RUNS_PREFIX, RESULTS_PREFIX] as const;

/**
 * A batch's manifest, its items and its results expire after the same days, untagged: each item's
 * run keeps its own copy of the draft under `runs/`, so a run awaiting review loses nothing. So do
 * the input and output files of batch pricing's Bedrock jobs, which hold the drafts' prompts and the
 * model's answers (each answer is also stored under its run).
 */
const BATCH_RETAINED_PREFIXES = [
  BATCHES_PREFIX,
  BATCH_ITEMS_PREFIX,
  BATCH_RESULTS_PREFIX,
  BEDROCK_JOBS_PREFIX,
] as const;

/**
 * Where drafts and runs live: one private bucket (uploads under `drafts/`, every attempt under `runs/`,
 * published drafts under `results/`) and the single DynamoDB table of runs, attempts and claims.
 */
export class Storage extends Construct {
  readonly bucket: IBucket;
  readonly table: ITable;
  /** Server access logs of the drafts bucket (none when the team brings its own bucket). */
  readonly accessLogsBucket: Bucket | undefined;

  constructor(scope: Construct, id: string, props: StorageProps) {
    super(scope, id);
    const destroy = props.removalPolicy === "destroy";
    const removalPolicy = destroy ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;

    this.bucket = props.existingBucket ?? this.createBuckets(props, removalPolicy, destroy);
    this.accessLogsBucket = props.existingBucket ? undefined : this.accessLogs;
    this.table = props.existingTable ?? this.createTable(removalPolicy, destroy);
  }

  private accessLogs: Bucket | undefined;

  private createBuckets(props: StorageProps, removalPolicy: RemovalPolicy, destroy: boolean): IBucket {
    this.accessLogs = new Bucket(this, "AccessLogs", {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      enforceSSL: true,
      versioned: true,
      lifecycleRules: [{ expiration: Duration.days(365), noncurrentVersionExpiration: Duration.days(30) }],
      removalPolicy,
      autoDeleteObjects: destroy,
    });

    const drafts = new Bucket(this, "Drafts", {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      enforceSSL: true,
      // Originals and attempts are evidence: a bad write can be rolled back to the previous version.
      versioned: true,
      // Uploads under drafts/ start runs through the default bus (see Triggers).
      eventBridgeEnabled: true,
      // aws-cdk-lib declares Bucket.isWebsite as `boolean | undefined` but IBucket.isWebsite as optional,
      // which exactOptionalPropertyTypes refuses; the object is the same.
      serverAccessLogsBucket: this.accessLogs as IBucket,
      serverAccessLogsPrefix: "drafts-bucket/",
      lifecycleRules: [
        { id: "abort-incomplete-uploads", abortIncompleteMultipartUploadAfter: Duration.days(7) },
        ...RETAINED_PREFIXES.map((prefix) => ({
          id: `expire-${prefix.replace("/", "")}`,
          prefix,
          // Uploads are not redraft's to tag; runs/ and results/ expire only while tagged standard,
          // so a run awaiting review (re-tagged `review` by λ outcome) keeps its objects.
          ...(prefix !== DRAFTS_PREFIX && {
            tagFilters: { [RETENTION_TAG]: RetentionTagValues.standard },
          }),
          expiration: Duration.days(props.retentionDays),
          noncurrentVersionExpiration: Duration.days(props.retentionDays),
        })),
        ...BATCH_RETAINED_PREFIXES.map((prefix) => ({
          id: `expire-${prefix.replace("/", "")}`,
          prefix,
          expiration: Duration.days(props.retentionDays),
          noncurrentVersionExpiration: Duration.days(props.retentionDays),
        })),
      ],
      removalPolicy,
      autoDeleteObjects: destroy,
    });
    // Bucket declares isWebsite `boolean | undefined`, IBucket optional (exactOptionalPropertyTypes).
    return drafts as IBucket;
  }

  private createTable(removalPolicy: RemovalPolicy, destroy: boolean): ITable {
    const stringKey = (name: string) => ({ name, type: AttributeType.STRING });
    const table = new Table(this, "Runs", {
      partitionKey: stringKey(PARTITION_KEY),
      sortKey: stringKey(SORT_KEY),
      billingMode: BillingMode.PAY_PER_REQUEST,
      encryption: TableEncryption.AWS_MANAGED,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      // Retention only: nothing reads or conditions on it (the local stores, SQLite and dynalite, have no TTL).
      timeToLiveAttribute: TTL_ATTRIBUTE,
      removalPolicy,
      deletionProtection: !destroy,
    });
    for (const index of Object.values(INDEXES)) {
      table.addGlobalSecondaryIndex({
        indexName: index.indexName,
        partitionKey: stringKey(index.partitionKey),
        sortKey: stringKey(index.sortKey),
        // Listings read the order from the index and the runs from the table (BatchGetItem).
        projectionType: ProjectionType[INDEX_PROJECTION],
      });
    }
    // Table declares tableStreamArn `string | undefined`, ITable optional (exactOptionalPropertyTypes).
    return table as ITable;
  }
}
