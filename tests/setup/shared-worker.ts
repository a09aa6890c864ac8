/**
 * Run before every test file (vitest.config.ts `setupFiles`). The workers run file after file in
 * one process without isolation, so whatever a file patches for the whole process and leaves behind
 * is seen by the files after it, and fails them far from the cause. vitest restores its own spies
 * after each file; aws-sdk-client-mock's `mockClient(SomeClient)` stubs the class's prototype,
 * every instance in the process included, until `.restore()`. A file that leaves one behind fails
 * here, with the stub taken away so that the next file runs against the real client.
 */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { S3Client } from "@aws-sdk/client-s3";
import { SFNClient } from "@aws-sdk/client-sfn";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { afterAll } from "vitest";

// Every CDK App a test makes without an outdir synthesizes into a fresh `cdk.out*` folder under the
// temp folder, and nothing removes it (`npm test` left nine, 7 MB). CDK_OUTDIR gives the apps of
// this worker one folder (they synthesize one after another), inside the run's own temp folder,
// which tests/setup/temp-root.ts removes when the run ends.
if (process.env.CDK_OUTDIR === undefined) {
  const root = process.env.REDRAFT_TEST_TMP;
  const outdir = mkdtempSync(join(root ?? tmpdir(), "cdk-"));
  process.env.CDK_OUTDIR = outdir;
  // Run without the global setup (one file, another config), this worker removes its own.
  if (root === undefined) process.once("exit", () => rmSync(outdir, { recursive: true, force: true }));
}

/** The clients the tests mock; a sinon stub carries `restore`, the real `send` does not. */
const CLIENTS = { DynamoDBDocumentClient, S3Client, SFNClient, EventBridgeClient };

afterAll(() => {
  const leaked: string[] = [];
  for (const [name, client] of Object.entries(CLIENTS)) {
    const send = client.prototype.send as { restore?: () => void };
    if (typeof send.restore === "function") {
      send.restore();
      leaked.push(name);
    }
  }
  if (leaked.length > 0)
    throw new Error(
      `this file left mockClient(${leaked.join(", ")}) stubbed for the files after it in this worker: ` +
        "call .restore() in an afterAll",
    );
});
