/**
 * Turns a synthesized CloudFormation template into the plain Amazon States Language object that
 * deploys, so tests can read it and the local runtime can run it: the ASL is taken from what CDK
 * synthesizes, never written by hand beside it.
 *
 * CloudFormation references inside the definition (`Ref`, `Fn::GetAtt`, pseudo parameters) become
 * deterministic fake names and ARNs built from the logical ids, the same on every synth.
 */

/** The parts of a CloudFormation template this module reads. */
export interface TemplateJson {
  Resources?: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
}

/** A state in the ASL, loosely typed: callers read the fields they know. */
export type AslState = Record<string, unknown> & { Type: string };

export interface AslDefinition {
  StartAt: string;
  States: Record<string, AslState>;
  TimeoutSeconds?: number;
  Comment?: string;
  QueryLanguage?: string;
  [key: string]: unknown;
}

export interface AslOptions {
  /** Logical id of the state machine, needed only when the template has more than one. */
  stateMachineLogicalId?: string;
  /** @default "123456789012" */
  account?: string;
  /** @default "us-east-1" */
  region?: string;
  /** @default "aws" */
  partition?: string;
  /** @default "redraft-local" */
  stackName?: string;
  /**
   * Chooses the value of a reference before the defaults apply (e.g. the local bucket's name for the
   * bucket's `Ref`). Return undefined to keep the default.
   */
  resolve?: (ref: ResourceRef) => string | undefined;
}

/** One reference found in the definition: `Ref` (attribute undefined) or `Fn::GetAtt`. */
export interface ResourceRef {
  logicalId: string;
  type: string;
  attribute?: string;
}

type Resources = NonNullable<TemplateJson["Resources"]>;

const STATE_MACHINE_TYPE = "AWS::StepFunctions::StateMachine";

/** Logical ids of the state machines in a template. */
export function stateMachineIds(template: TemplateJson): string[] {
  return Object.entries(template.Resources ?? {})
    .filter(([, resource]) => resource.Type === STATE_MACHINE_TYPE)
    .map(([id]) => id);
}

/**
 * The ASL of the template's state machine, as a plain object, with every CloudFormation reference in
 * it replaced by a deterministic fake name or ARN (see {@link fakeRefValue}).
 * Throws when the template has no state machine, or several and no `stateMachineLogicalId`.
 */
export function aslFromTemplate(template: TemplateJson, options: AslOptions = {}): AslDefinition {
  const resources = template.Resources ?? {};
  const ids = stateMachineIds(template);
  const id = options.stateMachineLogicalId ?? (ids.length === 1 ? ids[0] : undefined);
  if (id === undefined) {
    throw new Error(
      ids.length === 0
        ? "the template has no state machine"
        : `the template has ${ids.length} state machines (${ids.join(", ")}): pass stateMachineLogicalId`,
    );
  }
  const resource = resources[id];
  if (resource?.Type !== STATE_MACHINE_TYPE) throw new Error(`${id} is not a state machine in the template`);
  const props = resource.Properties ?? {};
  const raw = props.DefinitionString ?? props.Definition;
  const resolved = resolveValue(raw, resources, options);
  const substituted = substitute(resolved, props.DefinitionSubstitutions, resources, options);
  const definition = (
    typeof substituted === "string" ? JSON.parse(substituted) : substituted
  ) as AslDefinition;
  if (typeof definition?.StartAt !== "string" || typeof definition.States !== "object") {
    throw new Error(`the definition of ${id} is not an ASL state machine`);
  }
  return definition;
}

/**
 * The fake value a reference resolves to. Names come from the resource's own name property when it
 * is a literal (`Name`, `TableName`…), otherwise from the logical id; ARNs follow each service's
 * format, so the ASL still passes ARN checks.
 */
function fakeRefValue(ref: ResourceRef, resources: Resources, options: AslOptions = {}): string {
  const chosen = options.resolve?.(ref);
  if (chosen !== undefined) return chosen;
  const partition = options.partition ?? "aws";
  const region = options.region ?? "us-east-1";
  const account = options.account ?? "123456789012";
  const props = resources[ref.logicalId]?.Properties ?? {};
  const literal = (key: string): string | undefined =>
    typeof props[key] === "string" ? (props[key] as string) : undefined;
  const arn = (service: string, resource: string, regional = true) =>
    `arn:${partition}:${service}:${regional ? region : ""}:${regional ? account : ""}:${resource}`;

  switch (ref.type) {
    case "AWS::Lambda::Function": {
      const name = literal("FunctionName") ?? ref.logicalId;
      return ref.attribute === undefined ? name : arn("lambda", `function:${name}`);
    }
    case "AWS::Lambda::Alias": {
      // A qualified function ARN: the aliased function's, then the alias's name.
      const target = (props.FunctionName as { Ref?: unknown } | undefined)?.Ref;
      const fnProps = typeof target === "string" ? resources[target]?.Properties : undefined;
      const fnName =
        typeof fnProps?.FunctionName === "string"
          ? fnProps.FunctionName
          : typeof target === "string"
            ? target
            : ref.logicalId;
      return arn("lambda", `function:${fnName}:${literal("Name") ?? "live"}`);
    }
    case "AWS::S3::Bucket": {
      const name = literal("BucketName") ?? ref.logicalId.toLowerCase();
      return ref.attribute === undefined || ref.attribute === "BucketName" ? name : arn("s3", name, false);
    }
    case "AWS::DynamoDB::Table": {
      const name = literal("TableName") ?? ref.logicalId;
      return ref.attribute === undefined ? name : arn("dynamodb", `table/${name}`);
    }
    case "AWS::Events::EventBus": {
      const name = literal("Name") ?? ref.logicalId;
      return ref.attribute === undefined || ref.attribute === "Name"
        ? name
        : arn("events", `event-bus/${name}`);
    }
    case "AWS::SQS::Queue": {
      const name = literal("QueueName") ?? ref.logicalId;
      if (ref.attribute === undefined) return `https://sqs.${region}.amazonaws.com/${account}/${name}`;
      return ref.attribute === "QueueName" ? name : arn("sqs", name);
    }
    case "AWS::SNS::Topic":
      return arn("sns", literal("TopicName") ?? ref.logicalId);
    case "AWS::SecretsManager::Secret":
      return arn("secretsmanager", `secret:${literal("Name") ?? ref.logicalId}-AbCdEf`);
    default: {
      const service = ref.type.split("::")[1]?.toLowerCase() ?? "unknown";
      return ref.attribute === undefined ? ref.logicalId : arn(service, ref.logicalId);
    }
  }
}

function pseudo(name: string, options: AslOptions): string | undefined {
  switch (name) {
    case "AWS::Partition":
      return options.partition ?? "aws";
    case "AWS::Region":
      return options.region ?? "us-east-1";
    case "AWS::AccountId":
      return options.account ?? "123456789012";
    case "AWS::URLSuffix":
      return "amazonaws.com";
    case "AWS::StackName":
      return options.stackName ?? "redraft-local";
    default:
      return undefined;
  }
}

function refValue(
  logicalId: string,
  attribute: string | undefined,
  resources: Resources,
  options: AslOptions,
) {
  const known = pseudo(logicalId, options);
  if (known !== undefined && attribute === undefined) return known;
  const resource = resources[logicalId];
  if (!resource) throw new Error(`the definition refers to ${logicalId}, which is not in the template`);
  const ref: ResourceRef =
    attribute === undefined
      ? { logicalId, type: resource.Type }
      : { logicalId, type: resource.Type, attribute };
  return fakeRefValue(ref, resources, options);
}

/** Evaluates the intrinsic functions CDK emits in a definition; anything else is an error, not a guess. */
function resolveValue(value: unknown, resources: Resources, options: AslOptions): unknown {
  if (Array.isArray(value)) return value.map((v) => resolveValue(v, resources, options));
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(value);
  const [first] = entries;
  if (entries.length === 1 && first && (first[0] === "Ref" || first[0].startsWith("Fn::"))) {
    const [fn, arg] = first;
    const str = (v: unknown) => {
      const r = resolveValue(v, resources, options);
      if (typeof r !== "string") throw new Error(`${fn}: expected a string, got ${JSON.stringify(r)}`);
      return r;
    };
    switch (fn) {
      case "Ref":
        return refValue(String(arg), undefined, resources, options);
      case "Fn::GetAtt": {
        const [logicalId, attribute] = Array.isArray(arg) ? arg : String(arg).split(".");
        return refValue(String(logicalId), String(attribute), resources, options);
      }
      case "Fn::Join": {
        const [sep, parts] = arg as [string, unknown[]];
        return parts.map(str).join(sep);
      }
      case "Fn::Select": {
        const [index, list] = arg as [number | string, unknown];
        const items = resolveValue(list, resources, options);
        if (!Array.isArray(items)) throw new Error("Fn::Select: expected a list");
        return items[Number(index)];
      }
      case "Fn::Split": {
        const [sep, source] = arg as [string, unknown];
        return str(source).split(sep);
      }
      case "Fn::Sub": {
        const [text, vars] = (Array.isArray(arg) ? arg : [arg, {}]) as [string, Record<string, unknown>];
        return text.replace(/\$\{([^}!]+)\}/g, (_, name: string) => {
          if (name in vars) return str(vars[name]);
          const [logicalId, attribute] = name.split(".");
          return refValue(String(logicalId), attribute, resources, options);
        });
      }
      default:
        throw new Error(`unsupported intrinsic ${fn} in the state machine definition`);
    }
  }
  return Object.fromEntries(entries.map(([k, v]) => [k, resolveValue(v, resources, options)]));
}

/** Applies `DefinitionSubstitutions` (`${name}` placeholders) to the resolved definition string. */
function substitute(definition: unknown, substitutions: unknown, resources: Resources, options: AslOptions) {
  if (typeof definition !== "string" || substitutions === null || typeof substitutions !== "object") {
    return definition;
  }
  const values = resolveValue(substitutions, resources, options) as Record<string, unknown>;
  return definition.replace(/\$\{([A-Za-z0-9_]+)\}/g, (whole, name: string) =>
    name in values ? String(values[name]) : whole,
  );
}
