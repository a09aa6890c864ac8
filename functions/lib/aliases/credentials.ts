/**
 * Stands in, in the Lambda bundles only, for the credential providers that read a developer's
 * machine: shared config and credentials files (`fromIni`), SSO and login caches, `credential_process`
 * commands, web-identity token files. infra/bundling.ts maps each of those packages here
 * (esbuild `alias`, {@link LAMBDA_ALIASES}). The SDK's default chain imports them whatever runs it,
 * so esbuild cannot drop them, and with them the STS, SSO and sign-in clients they call: about
 * 90 KiB of every bundle.
 *
 * In Lambda they are never reached: the runtime puts the role's credentials in `AWS_ACCESS_KEY_ID`,
 * `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`, which the chain's first link (`fromEnv`) reads, and
 * a function has no `~/.aws`, SSO cache or token file for these links to read. Each link here passes
 * on to the next one (`tryNextLink`), as the real one does when it finds nothing, so the chain's later
 * links (container and instance metadata) still serve a runtime that provides credentials that way.
 *
 * @module
 */

/** A credential provider, as the SDK's chain calls it. */
type Provider = (properties?: Record<string, unknown>) => Promise<never>;

/** What the SDK's chain reads of a failed link: `tryNextLink` sends it on to the next provider. */
class CredentialsProviderError extends Error {
  override readonly name = "CredentialsProviderError";
  readonly tryNextLink = true;
}

function notBundled(provider: string): (init?: unknown) => Provider {
  return () => async () => {
    throw new CredentialsProviderError(
      `${provider} is not in this Lambda bundle: a function's credentials come from its environment`,
    );
  };
}

// The names the SDK imports from the replaced packages (credential-provider-ini, -sso, -process,
// -web-identity, -login); esbuild fails the build if one it needs is missing here.
export const fromIni = notBundled("fromIni");
export const fromSSO = notBundled("fromSSO");
export const fromProcess = notBundled("fromProcess");
export const fromTokenFile = notBundled("fromTokenFile");
export const fromWebToken = notBundled("fromWebToken");
export const fromLoginCredentials = notBundled("fromLoginCredentials");
