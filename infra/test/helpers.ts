import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Route } from '../lib/entry';
import { GatewayStack, GatewayStackProps } from '../lib/gateway-stack';

/** A one-certificate CA (test only; no key exists for it). */
export const UPSTREAM_CA_FIXTURE = path.join(__dirname, 'fixtures', 'upstream-ca.pem');

/** A stand-in for cargo-lambda's output: synth only stages the directory. */
export function placeholderRegisterCode(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-register-'));
  fs.writeFileSync(path.join(dir, 'bootstrap'), 'placeholder\n');
  return dir;
}

/** An App with cdk.json's context (feature flags), as the CLI would build it. */
export function testApp(): App {
  const cdkJson = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'cdk.json'), 'utf8'));
  return new App({ context: cdkJson.context });
}

export function gatewayStack(overrides: Partial<GatewayStackProps> = {}): { stack: GatewayStack; template: Template } {
  const app = testApp();
  const stack = new GatewayStack(app, 'Gateway', {
    env: { region: 'eu-west-1' },
    baseDomain: 'api.example.com',
    teamAccounts: ['222222222222', '333333333333'],
    certificateArn: 'arn:aws:acm:eu-west-1:111111111111:certificate/00000000-0000-0000-0000-000000000000',
    registerCodePath: placeholderRegisterCode(),
    upstreamCa: UPSTREAM_CA_FIXTURE,
    ...overrides,
  });
  return { stack, template: Template.fromStack(stack) };
}

/** The single resource of a type whose logical id starts with `prefix`. */
export function resourceId(template: Template, type: string, prefix: string): string {
  const ids = Object.keys(template.findResources(type)).filter((id) => id.startsWith(prefix));
  if (ids.length !== 1) {
    throw new Error(`expected one ${type} named ${prefix}*, found ${ids.join(', ') || 'none'}`);
  }
  return ids[0];
}

/** Every route-policy field of docs/design.md#route-policy, with values that pass the checks. */
export const FULL_ROUTE_POLICY: Omit<Route, 'path' | 'methods' | 'limits'> = {
  timeout: '5s',
  retries: { attempts: 2, on: ['connect-failure', 'reset', '5xx'], per_try_timeout: '2s' },
  rewrite: '/v2/invoices',
  request_headers: { add: { 'x-team': 'billing' }, remove: ['x-debug'] },
  response_headers: { add: { 'cache-control': 'no-store' }, remove: ['server'] },
  cors: { origins: ['https://app.example.com'], methods: ['GET'], headers: ['x-api-key'], max_age: '10m', credentials: false },
  websocket: false,
};
