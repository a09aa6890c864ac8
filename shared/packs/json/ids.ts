/** Rule ids the json kind reports under. */
export const JSON_RULE_IDS = {
  schema: "json_schema",
  missing: "json_schema_missing",
  invalid: "json_schema_invalid",
  repair: "json_repair",
  /** Info: something the schema asks for is not checked (a format Ajv does not know). */
  schemaWarning: "json_schema_warning",
  /** Info: the repair walk stepped aside where it could not decide safely. */
  repairSkipped: "json_repair_skipped",
} as const;

/** The correction-prompt rule seed 001 added after models kept filling optional pattern fields with "". */
export const OMIT_OPTIONAL_RULE =
  "omit an optional field you have no valid value for; never emit an empty string";
