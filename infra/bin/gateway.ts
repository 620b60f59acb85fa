#!/usr/bin/env node
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import * as path from 'path';
import { ExampleTeamStack } from '../lib/example-team-stack';
import { GatewayStack } from '../lib/gateway-stack';

/**
 * Context (`-c key=value` or cdk.json):
 *   baseDomain        required, e.g. api.example.com (GATEWAY_DOMAIN)
 *   teamAccounts      comma-separated account ids allowed to register
 *   organizationId    o-… : every account of the organisation may register
 *   certificateArn    ACM certificate of the listener (HTTP only without it)
 *   registerCodePath  cargo-lambda output dir; default ../target/lambda/register
 *   account, region   deployment environment; default the CLI's
 *   exampleTeam       "true" adds a sample team stack (used by check.sh to lint the construct)
 */
const app = new App();
const ctx = (key: string): string | undefined => {
  const v = app.node.tryGetContext(key);
  return v === undefined || v === '' ? undefined : String(v);
};
const baseDomain = ctx('baseDomain');
if (!baseDomain) {
  throw new Error('context baseDomain is required, e.g. cdk synth -c baseDomain=api.example.com');
}
const env = {
  account: ctx('account') ?? process.env.CDK_DEFAULT_ACCOUNT,
  region: ctx('region') ?? process.env.CDK_DEFAULT_REGION,
};
const registerCodePath = ctx('registerCodePath');

const gateway = new GatewayStack(app, 'Gateway', {
  env,
  description: 'Shared Envoy gateway: registry, register/reconcile functions, config bucket, alarms, proxy fleet',
  baseDomain,
  teamAccounts: (ctx('teamAccounts') ?? '').split(',').map((a) => a.trim()).filter((a) => a.length > 0),
  organizationId: ctx('organizationId'),
  certificateArn: ctx('certificateArn'),
  registerCodePath: registerCodePath ? path.resolve(registerCodePath) : undefined,
});

if (ctx('exampleTeam') === 'true') {
  new ExampleTeamStack(app, 'ExampleTeam', {
    env,
    description: 'Sample team stack: billing/invoices-api on the gateway',
    serviceToken: gateway.register.function,
    baseDomain,
  });
}

Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
