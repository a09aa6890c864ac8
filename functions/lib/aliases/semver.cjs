// Stands in for `semver` in the Lambda bundles (esbuild `alias`, infra/bundling.ts).
// Its users there, the X-Ray SDK under Powertools Tracer (aws-xray-sdk-core's AWS SDK v2 patcher,
// and cls-hooked, which checks the Node version when it loads), call only `semver.gte`; the package
// is CommonJS, which esbuild cannot trim, and cls-hooked brings a second copy (semver 5): about
// 20 KiB of every bundle for one function. This is that function, semver's own file, by path: a
// `semver/…` specifier would be sent back here by the alias.
module.exports = { gte: require("../../../node_modules/semver/functions/gte.js") };
