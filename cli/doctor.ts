import { ScanCommand, type ScanCommandOutput } from "@aws-sdk/client-dynamodb";
import type { LocalRuntime } from "../local/runtime.js";

/**
 * `redraft doctor`: reads the whole database of a data folder, so that a damaged table file is
 * found now rather than by the next listing; `--repair` rebuilds it (local/repair.ts).
 */
export async function checkDatabase(runtime: LocalRuntime, table: string): Promise<number> {
  let items = 0;
  let start: ScanCommandOutput["LastEvaluatedKey"];
  do {
    const page: ScanCommandOutput = await runtime.dynamo.send(
      new ScanCommand({ TableName: table, ExclusiveStartKey: start, Select: "COUNT" }),
    );
    items += page.Count ?? 0;
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}
