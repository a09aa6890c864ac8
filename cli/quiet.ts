/**
 * The handlers log and emit metrics to stdout, as Lambda wants. Run locally from the command
 * line, that stdout belongs to the user (`--json` must carry result lines only), so the Powertools
 * logger is silenced and metrics are disabled unless the environment already says otherwise.
 * Imported first by cli/main.ts, before any handler module builds its logger.
 */
process.env.POWERTOOLS_LOG_LEVEL ??= "SILENT";
process.env.POWERTOOLS_METRICS_DISABLED ??= "true";

// The AWS SDK warns on Node < 22 about its releases after January 2027. Locally it talks at most to
// the embedded dynalite of a folder made before SQLite, and the lockfile pins the SDK; the warning
// would only bury the output.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

export {};
