import { Aws, CustomResource, Stack, Token } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { Entry, entryKey, HealthCheck } from './entry';
import { entryProblems, EntryRejected } from './entry-schema';

export { EntryRejected } from './entry-schema';
export type { Problem } from './entry-schema';

/** The CloudFormation type of a registration; the register function answers for it. */
export const REGISTRATION_RESOURCE_TYPE = 'Custom::GatewayRoute';

/**
 * The gateway's registration topics, one per team account (`<prefix>-register-<account>`): the
 * construct sends its events to the topic of its own stack's account, the only one that account
 * may publish to, and the topic is how the register function knows who is calling.
 */
export interface GatewayRegistrationTopics {
  readonly gatewayAccount: string;
  readonly gatewayRegion: string;
  /** The gateway stack's `RegistrationTopicNamePrefix` output. */
  readonly topicNamePrefix: string;
}

/**
 * Where registrations go: the register function (stacks in the gateway's own account), or the
 * registration topics when the team deploys from another account (CloudFormation publishes the
 * event to the account's topic and the topic invokes the function).
 */
export type GatewayServiceToken = string | lambda.IFunction | sns.ITopic | GatewayRegistrationTopics;

/** The entry's own fields (`health_check` spelled `healthCheck`, as props are), and how to register it. */
export interface ExposeOnGatewayProps extends Omit<Entry, 'health_check'> {
  /** Active HTTP health checking of the backend(s). */
  readonly healthCheck?: HealthCheck;
  /**
   * The register function (ARN or construct; the gateway account's own stacks), or the
   * registration topics (`GatewayRegistrationTopics`, from the gateway stack's outputs
   * `RegistrationTopicNamePrefix`; or this account's topic ARN or construct).
   */
  readonly serviceToken: GatewayServiceToken;
  /** The gateway's base domain; when given, `hostname` is `host.baseDomain`. */
  readonly baseDomain?: string;
  /**
   * @deprecated Ignored. The register function judges `timeout` against the gateway's own
   * `GATEWAY_MAX_ROUTE_TIMEOUT` at deploy and fails the deploy naming the field.
   */
  readonly maxRouteTimeoutMs?: number;
  /**
   * @deprecated Ignored. The register function judges `retries.attempts` against the gateway's
   * own `GATEWAY_MAX_RETRY_ATTEMPTS` at deploy and fails the deploy naming the field.
   */
  readonly maxRetryAttempts?: number;
  /**
   * When the deploy step succeeds (docs/design.md#deploys-that-wait): `registered` once the
   * entry is stored; `published` (default) once the reconciler has published it, FAILED with
   * the stage and reason when it quarantines it or when it is not published within the register
   * function's wait (`GATEWAY_PUBLISH_WAIT_SECONDS`, default 240 s); `serving` once, in
   * addition, every proxy currently reporting (at least one) serves it, within the same wait
   * (docs/design.md#proxy-reports); `promoted` once, after `published`, the entry's `rollout`
   * ended with it serving every request (its last step, or an operator's promote), FAILED when
   * the gateway rolled it back or an operator aborted it, so the stack rolls back to its
   * previous entry; the same bounded wait, so its steps × interval must fit in it
   * (docs/design.md#rollout).
   */
  readonly waitFor?: 'registered' | 'published' | 'serving' | 'promoted';
}

/**
 * Puts one team service's routes on the shared gateway from the team's own stack.
 *
 * At synth the entry is validated against the entry's JSON Schema (`schema/entry.schema.json`:
 * shape and fixed bounds), and `EntryRejected` names every field that fails it. The register
 * function decides the rest at deploy (the gateway's settings, addresses, conflicts), failing
 * the deploy with the field and the reason.
 *
 * Create and update call the register function with the entry; delete deregisters it. The
 * custom resource's physical id is `team/service`, so changing either replaces the registration:
 * CloudFormation registers the new key, then deletes the old one.
 *
 * Resource properties (the register function's contract):
 * - `Entry`: the entry document as a JSON string. CloudFormation turns every number in custom
 *   resource properties into a string, so the entry travels as one string and keeps its types.
 * - `EntryKey`: `team/service`, for logs and for deregistering.
 * - `WaitFor`: `registered`, `published` (default), `serving` or `promoted`, see `waitFor`.
 */
export class ExposeOnGateway extends Construct {
  /** The entry sent to the register function, exactly as validated. */
  readonly entry: Entry;
  /** The full hostname, when the base domain is known at synth. */
  readonly hostname?: string;
  readonly resource: CustomResource;

  constructor(scope: Construct, id: string, props: ExposeOnGatewayProps) {
    super(scope, id);
    this.entry = {
      team: props.team,
      service: props.service,
      host: props.host,
      ...(props.backend !== undefined ? { backend: props.backend } : {}),
      ...(props.backends !== undefined ? { backends: props.backends } : {}),
      ...(props.protocol !== undefined ? { protocol: props.protocol } : {}),
      ...(props.canary !== undefined ? { canary: props.canary } : {}),
      ...(props.healthCheck !== undefined ? { health_check: props.healthCheck } : {}),
      ...(props.preserve_host !== undefined ? { preserve_host: props.preserve_host } : {}),
      ...(props.jwt !== undefined ? { jwt: props.jwt } : {}),
      routes: props.routes,
      ...(props.rollout !== undefined ? { rollout: props.rollout } : {}),
    };
    // A field only known at deploy time (a token, e.g. a load balancer's DNS name in the
    // backend) cannot be judged here; the register function checks everything again,
    // authoritatively, with the registry in view.
    const problems = entryProblems(this.entry).filter(
      (p) => !containsToken((this.entry as unknown as Record<string, unknown>)[topLevelField(p.field)]),
    );
    if (problems.length > 0) {
      throw new EntryRejected(problems);
    }
    if (props.baseDomain) {
      this.hostname = `${props.host}.${props.baseDomain}`;
    }
    this.resource = new CustomResource(this, 'Registration', {
      serviceToken: serviceTokenArn(this, props.serviceToken),
      resourceType: REGISTRATION_RESOURCE_TYPE,
      properties: {
        Entry: JSON.stringify(this.entry),
        EntryKey: entryKey(this.entry),
        WaitFor: props.waitFor ?? 'published',
      },
    });
  }
}

function serviceTokenArn(scope: Construct, token: GatewayServiceToken): string {
  const account = Stack.of(scope).account;
  if (typeof token !== 'string') {
    if ('topicNamePrefix' in token) {
      return `arn:${Aws.PARTITION}:sns:${token.gatewayRegion}:${token.gatewayAccount}:${token.topicNamePrefix}-register-${account}`;
    }
    return 'functionArn' in token ? token.functionArn : checkTopicAccount(token.topicArn, account);
  }
  if (!Token.isUnresolved(token) && !/^arn:aws[a-z-]*:(lambda|sns):[a-z0-9-]+:\d{12}:.+$/.test(token)) {
    throw new Error(`serviceToken "${token}": expected the ARN of the register function or of the registration topic`);
  }
  return token.includes(':sns:') ? checkTopicAccount(token, account) : token;
}

/** A registration topic serves one account; another account's would refuse every event. */
function checkTopicAccount(topicArn: string, account: string): string {
  const served = /-register-(\d{12})$/.exec(topicArn)?.[1];
  if (served && !Token.isUnresolved(topicArn) && !Token.isUnresolved(account) && served !== account) {
    throw new Error(
      `serviceToken ${topicArn} is the registration topic of account ${served}; this stack deploys to account ${account}, so use ${topicArn.replace(/\d{12}$/, account)}`,
    );
  }
  return topicArn;
}

/** `routes[1].limits[0].every` → `routes`. */
function topLevelField(field: string): string {
  return field.split(/[.[]/)[0];
}

function containsToken(value: unknown): boolean {
  if (typeof value === 'string') return Token.isUnresolved(value);
  if (typeof value === 'number') return Token.isUnresolved(value);
  if (Array.isArray(value)) return value.some(containsToken);
  if (value && typeof value === 'object') return Object.values(value).some(containsToken);
  return false;
}
