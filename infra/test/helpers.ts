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

/** One statement of a policy in a template, with who holds it. */
export interface HeldStatement {
  /** `iam:<logical ids of the roles, users or groups>` for identity policies, `key:<logical id>` for a key policy. */
  readonly holder: string;
  readonly statement: Record<string, unknown>;
}

/**
 * Every statement of every policy document in the template: IAM policies and managed policies
 * (held by the roles, users and groups they attach to), roles' inline policies, and KMS key
 * policies.
 */
export function allPolicyStatements(template: Template): HeldStatement[] {
  const out: HeldStatement[] = [];
  const statements = (doc: unknown) => ((doc as { Statement?: Record<string, unknown>[] })?.Statement ?? []);
  const refs = (p: Record<string, unknown>) =>
    ['Roles', 'Users', 'Groups']
      .flatMap((k) => (p[k] as unknown[] | undefined) ?? [])
      .map((r) => (r as { Ref?: string }).Ref ?? JSON.stringify(r))
      .sort()
      .join(',');
  for (const type of ['AWS::IAM::Policy', 'AWS::IAM::ManagedPolicy']) {
    for (const r of Object.values(template.findResources(type))) {
      for (const statement of statements(r.Properties.PolicyDocument)) {
        out.push({ holder: `iam:${refs(r.Properties)}`, statement });
      }
    }
  }
  for (const [id, r] of Object.entries(template.findResources('AWS::IAM::Role'))) {
    for (const policy of (r.Properties.Policies ?? []) as { PolicyDocument: unknown }[]) {
      for (const statement of statements(policy.PolicyDocument)) {
        out.push({ holder: `iam:${id}`, statement });
      }
    }
  }
  for (const [id, r] of Object.entries(template.findResources('AWS::KMS::Key'))) {
    for (const statement of statements(r.Properties.KeyPolicy)) {
      out.push({ holder: `key:${id}`, statement });
    }
  }
  return out;
}

/** Whether an IAM action pattern (`*`, `kms:*`, `kms:Sig?`, …) matches `action`, as IAM matches it. */
export function actionMatches(pattern: string, action: string): boolean {
  const regex = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${regex}$`, 'i').test(action);
}

/** Whether a statement (Action or NotAction) applies to `action`. */
export function statementCovers(statement: Record<string, unknown>, action: string): boolean {
  const list = (v: unknown) => (v === undefined ? [] : Array.isArray(v) ? (v as string[]) : [v as string]);
  if (statement.NotAction !== undefined) {
    return !list(statement.NotAction).some((p) => actionMatches(p, action));
  }
  return list(statement.Action).some((p) => actionMatches(p, action));
}
