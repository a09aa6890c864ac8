/**
 * The Step Functions console page of an execution, built from its ARN alone: the region is the
 * ARN's fourth field, and the page sits under the console of that region. Only standard executions
 * of the `aws` partition are linked; anything else (another partition, an express execution, a
 * string that is no execution ARN) gives undefined, so a page never shows a link that goes nowhere.
 *
 * The name part is held to the characters Step Functions allows in an execution name (no
 * whitespace, no `<>{}[]?*"#%\^|~\`$&,;:/`), which also keeps the ARN safe to put in a URL fragment.
 */
const EXECUTION_ARN =
  /^arn:aws:states:([a-z]{2}(?:-[a-z]+)+-\d):(\d{12}):execution:([^\s\p{Cc}:<>{}[\]?*"#%\\^|~`$&,;/]{1,80}):([^\s\p{Cc}:<>{}[\]?*"#%\\^|~`$&,;/]{1,80})$/u;

export function executionConsoleUrl(executionArn: string): string | undefined {
  const region = EXECUTION_ARN.exec(executionArn)?.[1];
  if (region === undefined) return undefined;
  return `https://${region}.console.aws.amazon.com/states/home?region=${region}#/v2/executions/details/${executionArn}`;
}
