// Stands in for `@aws-sdk/credential-providers` in the Lambda bundles (esbuild `alias`,
// infra/bundling.ts). Its one user there is the SigV4 signer of the Bedrock model client
// (`@anthropic-ai/bedrock-sdk/core/auth`, shared/model/bedrock.ts), which imports the package as a
// whole, by `import()`, for three names; esbuild then keeps every provider the package's index
// re-exports, the Cognito identity client and the STS client among them (about 90 KiB of prod's
// correct and judge). These are the package's own three modules, by path: a
// `@aws-sdk/credential-providers/…` specifier would be sent back here by the alias. The chain they
// build is the one the signer builds without the stand-in: the environment first (Lambda's role
// credentials), then the default Node chain.
export { createCredentialChain } from "../../../node_modules/@aws-sdk/credential-providers/dist-es/createCredentialChain.js";
export { fromEnv } from "../../../node_modules/@aws-sdk/credential-providers/dist-es/fromEnv.js";
export { fromNodeProviderChain } from "../../../node_modules/@aws-sdk/credential-providers/dist-es/fromNodeProviderChain.js";
