import { CustomResource, Duration, Stack, Validations } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as cr from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';

export interface SeedProps {
  /** The reconcile function; its `{"action":"seed"}` path creates the first bundle. */
  readonly reconcile: lambda.IFunction;
}

/**
 * Creates the first `bundle.json` at deploy time, before any proxy starts (a proxy cannot start
 * without a bundle to deliver).
 *
 * The bundle is rendered and hashed by the Rust renderer, so the seed is not a static object
 * here: the step invokes the reconcile function with `{"action":"seed"}`, whose seed path
 * renders the empty registry (the catch-all host only) and writes it with `If-None-Match: *`.
 * A bundle that already exists answers 412 and is left alone, so running this again on every
 * deploy can never overwrite a published config. A seed that fails fails the deployment.
 */
export class Seed extends Construct {
  readonly resource: CustomResource;

  constructor(scope: Construct, id: string, props: SeedProps) {
    super(scope, id);
    const onEvent = new lambda.Function(this, 'Invoker', {
      description: 'Invokes the reconcile function once with {"action":"seed"}; fails on a function error.',
      runtime: lambda.Runtime.NODEJS_24_X,
      handler: 'index.handler',
      code: lambda.Code.fromInline(SEED_INVOKER_SOURCE),
      timeout: Duration.minutes(5),
      logGroup: new logs.LogGroup(this, 'InvokerLogs', { retention: logs.RetentionDays.ONE_MONTH }),
      environment: { RECONCILE_FUNCTION: props.reconcile.functionName },
    });
    props.reconcile.grantInvoke(onEvent);
    const provider = new cr.Provider(this, 'Provider', {
      onEventHandler: onEvent,
      logGroup: new logs.LogGroup(this, 'ProviderLogs', { retention: logs.RetentionDays.ONE_MONTH }),
    });
    this.resource = new CustomResource(this, 'Resource', {
      serviceToken: provider.serviceToken,
      resourceType: 'Custom::GatewaySeed',
      // Changing the reconcile function re-runs the (idempotent) seed.
      properties: { ReconcileFunction: props.reconcile.functionArn },
    });
    // grantInvoke and the provider framework both allow `<function ARN>:*` (its versions and
    // aliases) next to the bare ARN: one function each, nothing broader.
    Validations.of(onEvent).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${Stack.of(this).getLogicalId(
        props.reconcile.node.defaultChild as lambda.CfnFunction,
      )}.Arn>:*]`,
      reason: 'Invoking the reconcile function includes its versions and aliases (ARN:*); nothing else.',
    });
    Validations.of(provider).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${Stack.of(this).getLogicalId(onEvent.node.defaultChild as lambda.CfnFunction)}.Arn>:*]`,
      reason: 'The provider framework invokes the seed invoker, its versions and aliases (ARN:*); nothing else.',
    });
    Validations.of(this).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      reason: 'The AWS-managed basic execution policy grants only CloudWatch Logs writes.',
    });
  }
}

/**
 * Inline (no asset): the AWS SDK v3 ships with the Node.js runtime. Retries throttles because
 * the reconcile function runs one at a time and the schedule may hold the slot.
 */
const SEED_INVOKER_SOURCE = `
const { LambdaClient, InvokeCommand } = require('@aws-sdk/client-lambda');
const client = new LambdaClient({ maxAttempts: 10 });
exports.handler = async (event) => {
  if (event.RequestType === 'Delete') {
    return { PhysicalResourceId: event.PhysicalResourceId };
  }
  const out = await client.send(new InvokeCommand({
    FunctionName: process.env.RECONCILE_FUNCTION,
    Payload: Buffer.from(JSON.stringify({ action: 'seed' })),
  }));
  const body = out.Payload ? Buffer.from(out.Payload).toString('utf8') : '';
  if (out.FunctionError) {
    throw new Error('seed failed: ' + body.slice(0, 2000));
  }
  console.log('seed result', body);
  return { PhysicalResourceId: 'gateway-seed' };
};
`;
