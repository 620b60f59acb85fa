#!/usr/bin/env node
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import * as path from 'path';
import { DEFAULT_CAPACITY } from '../lib/capacity';
import { ExampleTeamStack } from '../lib/example-team-stack';
import { GatewayStack } from '../lib/gateway-stack';

/**
 * Context (`-c key=value` or cdk.json):
 *   baseDomain        required, e.g. api.example.com (GATEWAY_DOMAIN)
 *   teamAccounts      comma-separated account ids allowed to register (one topic each; teams
 *                     are granted to accounts in the registry: gatewayctl grant)
 *   certificateArn    ACM certificate of the listener (HTTP only without it)
 *   upstreamCa        required: PEM file of the CAs https backends chain to, or "system"
 *   capacityRoutes, capacityClusters
 *                     the largest registry the gateway holds (default 20000 and 2500); sizes
 *                     the reconcile function and the proxy task
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
if (ctx('organizationId')) {
  // One topic per account is what tells the register function who is calling; an
  // organisation-wide topic would not.
  throw new Error('context organizationId is no longer supported: list every team account in teamAccounts');
}

const gateway = new GatewayStack(app, 'Gateway', {
  env,
  description: 'Shared Envoy gateway: registry, register/reconcile functions, config bucket, alarms, proxy fleet',
  baseDomain,
  teamAccounts: (ctx('teamAccounts') ?? '').split(',').map((a) => a.trim()).filter((a) => a.length > 0),
  certificateArn: ctx('certificateArn'),
  registerCodePath: registerCodePath ? path.resolve(registerCodePath) : undefined,
  upstreamCa: ctx('upstreamCa') ?? '',
  capacity:
    ctx('capacityRoutes') || ctx('capacityClusters')
      ? {
          routes: Number(ctx('capacityRoutes') ?? DEFAULT_CAPACITY.routes),
          clusters: Number(ctx('capacityClusters') ?? DEFAULT_CAPACITY.clusters),
        }
      : undefined,
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
