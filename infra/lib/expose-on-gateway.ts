import { CustomResource, Token } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { checkEntry, EntryRejected } from './entry-checks';
import { Entry, entryKey, Route } from './entry';

/** The CloudFormation type of a registration; the register function answers for it. */
export const REGISTRATION_RESOURCE_TYPE = 'Custom::GatewayRoute';

/**
 * Where registrations go: the register function, or the gateway's registration topic when the
 * team deploys from another account (CloudFormation publishes the event to the topic and the
 * topic invokes the function).
 */
export type GatewayServiceToken = string | lambda.IFunction | sns.ITopic;

export interface ExposeOnGatewayProps {
  readonly team: string;
  readonly service: string;
  /** DNS labels in front of the gateway's base domain. */
  readonly host: string;
  /** `http://` or `https://` URL with host and optional port. */
  readonly backend: string;
  readonly routes: Route[];
  /**
   * The register function (ARN or construct) or the registration topic (ARN or construct). The
   * gateway stack exports both as outputs: `RegisterFunctionArn`, `RegistrationTopicArn`.
   */
  readonly serviceToken: GatewayServiceToken;
  /** The gateway's base domain; when given, the full hostname is checked at synth (≤ 253). */
  readonly baseDomain?: string;
}

/**
 * Puts one team service's routes on the shared gateway from the team's own stack.
 *
 * Create and update call the register function with the entry; delete deregisters it. The
 * custom resource's physical id is `team/service`, so changing either replaces the registration:
 * CloudFormation registers the new key, then deletes the old one.
 *
 * Resource properties (the register function's contract):
 * - `Entry`: the entry document as a JSON string. CloudFormation turns every number in custom
 *   resource properties into a string, so the entry travels as one string and keeps its types.
 * - `EntryKey`: `team/service`, for logs and for deregistering.
 */
export class ExposeOnGateway extends Construct {
  /** The entry sent to the register function, exactly as checked. */
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
      backend: props.backend,
      routes: props.routes,
    };
    // A field only known at deploy time (a token, e.g. a load balancer's DNS name in the
    // backend) cannot be checked here; the register function checks everything again,
    // authoritatively, with the registry in view.
    const problems = checkEntry(this.entry, { baseDomain: props.baseDomain }).filter(
      (p) => !containsToken((this.entry as unknown as Record<string, unknown>)[topLevelField(p.field)]),
    );
    if (problems.length > 0) {
      throw new EntryRejected(problems);
    }
    if (props.baseDomain) {
      this.hostname = `${props.host}.${props.baseDomain}`;
    }
    this.resource = new CustomResource(this, 'Registration', {
      serviceToken: serviceTokenArn(props.serviceToken),
      resourceType: REGISTRATION_RESOURCE_TYPE,
      properties: {
        Entry: JSON.stringify(this.entry),
        EntryKey: entryKey(this.entry),
      },
    });
  }
}

function serviceTokenArn(token: GatewayServiceToken): string {
  if (typeof token !== 'string') {
    return 'functionArn' in token ? token.functionArn : token.topicArn;
  }
  if (!Token.isUnresolved(token) && !/^arn:aws[a-z-]*:(lambda|sns):[a-z0-9-]+:\d{12}:.+$/.test(token)) {
    throw new Error(`serviceToken "${token}": expected the ARN of the register function or of the registration topic`);
  }
  return token;
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
