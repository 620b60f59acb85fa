import { Match, Template } from 'aws-cdk-lib/assertions';
import { ONLY_SIGNERS_SID } from '../lib/signing-key';
import { actionMatches, allPolicyStatements, gatewayStack, resourceId, statementCovers } from './helpers';

let template: Template;

beforeAll(() => {
  ({ template } = gatewayStack());
});

const arnOf = (id: string) => ({ 'Fn::GetAtt': [id, 'Arn'] });
const accountRoot = {
  'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iam::', { Ref: 'AWS::AccountId' }, ':root']],
};

const keyId = () => resourceId(template, 'AWS::KMS::Key', 'BundleSigningKey');
const reconcileRole = () => resourceId(template, 'AWS::IAM::Role', 'ReconcileFunctionServiceRole');
const breakGlassRole = () => resourceId(template, 'AWS::IAM::Role', 'BreakGlassRole');
const keyPolicy = () =>
  template.toJSON().Resources[keyId()].Properties.KeyPolicy.Statement as Record<string, unknown>[];

type Container = { Name: string; Command?: unknown[]; Environment?: { Name: string; Value: unknown }[] };
function containers(t: Template): Record<string, Container> {
  const task = Object.values(t.findResources('AWS::ECS::TaskDefinition'))[0];
  return Object.fromEntries((task.Properties.ContainerDefinitions as Container[]).map((c) => [c.Name, c]));
}
const envOf = (c: Container) => Object.fromEntries((c.Environment ?? []).map((e) => [e.Name, e.Value]));

/** Every Allow statement of an IAM policy in the template that lets its holder call `action`. */
function identityAllows(t: Template, action: string) {
  return allPolicyStatements(t).filter(
    (h) => h.holder.startsWith('iam:') && h.statement.Effect === 'Allow' && statementCovers(h.statement, action),
  );
}

describe('bundle signing key', () => {
  test('an ECC P-256 sign/verify key, retained, without automatic rotation, behind alias/gateway-bundles', () => {
    template.resourceCountIs('AWS::KMS::Key', 2); // this one and the topics' symmetric key
    template.hasResource('AWS::KMS::Key', {
      Properties: {
        KeySpec: 'ECC_NIST_P256',
        KeyUsage: 'SIGN_VERIFY',
        EnableKeyRotation: false,
        Description: Match.stringLikeRegexp('bundle'),
      },
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
    expect(template.toJSON().Resources[keyId()].Properties.KeySpec).toBe('ECC_NIST_P256');
    template.hasResourceProperties('AWS::KMS::Alias', {
      AliasName: 'alias/gateway-bundles',
      TargetKeyId: arnOf(keyId()),
    });
  });

  test('kms:Sign is allowed to the reconcile role and the break-glass role, on this key, and to no other identity', () => {
    const allows = identityAllows(template, 'kms:Sign');
    const holders = allows.map((h) => h.holder).sort();
    expect(holders).toEqual([`iam:${breakGlassRole()}`, `iam:${reconcileRole()}`].sort());
    for (const { statement } of allows) {
      expect(statement.Resource).toEqual(arnOf(keyId()));
      expect(statement.Condition).toBeUndefined();
    }
    // Both signers also read the public key (gatewayctl and the reconciler record its id).
    for (const role of [reconcileRole(), breakGlassRole()]) {
      expect(identityAllows(template, 'kms:GetPublicKey').map((h) => h.holder)).toContain(`iam:${role}`);
    }
  });

  test('in the key policy, only the account delegation allows kms:Sign, and the deny leaves it to the two signers', () => {
    const allows = keyPolicy().filter((s) => s.Effect === 'Allow' && statementCovers(s, 'kms:Sign'));
    // The account root keeps administering the key (kms:*, which IAM policies then delegate):
    // the deny below is what keeps kms:Sign from every other identity.
    expect(allows).toEqual([{ Effect: 'Allow', Principal: { AWS: accountRoot }, Action: 'kms:*', Resource: '*' }]);
    const denies = keyPolicy().filter((s) => s.Effect === 'Deny');
    expect(denies).toEqual([
      {
        Sid: ONLY_SIGNERS_SID,
        Effect: 'Deny',
        Principal: { AWS: '*' },
        Action: 'kms:Sign',
        Resource: '*',
        Condition: { ArnNotEquals: { 'aws:PrincipalArn': [arnOf(reconcileRole()), arnOf(breakGlassRole())] } },
      },
    ]);
    // The deny is for signing only: administration (and deletion) stays with the account.
    for (const admin of ['kms:PutKeyPolicy', 'kms:ScheduleKeyDeletion', 'kms:DisableKey', 'kms:GetPublicKey']) {
      expect(denies.some((s) => statementCovers(s, admin))).toBe(false);
    }
  });

  test('it is the only signing key in the template', () => {
    const signing = Object.keys(
      template.findResources('AWS::KMS::Key', { Properties: { KeyUsage: 'SIGN_VERIFY' } }),
    );
    expect(signing).toEqual([keyId()]);
  });

  test('the proxy task role (both sidecars) may kms:GetPublicKey on the trusted key, never kms:Sign', () => {
    const task = Object.values(template.findResources('AWS::ECS::TaskDefinition'))[0];
    const taskRole = resourceId(template, 'AWS::IAM::Role', 'ProxyTaskTaskRole');
    expect(task.Properties.TaskRoleArn).toEqual(arnOf(taskRole));
    const held = allPolicyStatements(template).filter((h) => h.holder === `iam:${taskRole}`);
    expect(held.filter((h) => statementCovers(h.statement, 'kms:GetPublicKey'))).toEqual([
      { holder: `iam:${taskRole}`, statement: { Sid: 'VerifyBundles', Effect: 'Allow', Action: 'kms:GetPublicKey', Resource: arnOf(keyId()) } },
    ]);
    expect(held.some((h) => h.statement.Effect === 'Allow' && statementCovers(h.statement, 'kms:Sign'))).toBe(false);
    // The execution role pulls images and reads the Redis secret; it has no use for the key.
    const exec = resourceId(template, 'AWS::IAM::Role', 'ProxyTaskExecutionRole');
    const execActions = allPolicyStatements(template)
      .filter((h) => h.holder === `iam:${exec}`)
      .flatMap((h) => [h.statement.Action].flat() as string[]);
    expect(execActions.some((a) => actionMatches(a, 'kms:Sign') || actionMatches(a, 'kms:GetPublicKey'))).toBe(false);
  });

  test('the reconcile function signs with the key (GATEWAY_SIGNING_KEY); the register function does not sign', () => {
    const fns = template.findResources('AWS::Lambda::Function');
    const env = (prefix: string) =>
      fns[resourceId(template, 'AWS::Lambda::Function', prefix)].Properties.Environment.Variables as Record<string, unknown>;
    expect(env('ReconcileFunction').GATEWAY_SIGNING_KEY).toEqual(arnOf(keyId()));
    expect(env('RegisterFunction').GATEWAY_SIGNING_KEY).toBeUndefined();
  });

  test('both sidecars trust the key (GATEWAY_TRUST_KMS_KEYS) and no container may accept unsigned bundles', () => {
    const all = containers(template);
    for (const name of ['sidecar', 'ratelimit-sidecar']) {
      expect(envOf(all[name]).GATEWAY_TRUST_KMS_KEYS).toEqual(arnOf(keyId()));
      expect(all[name].Command?.[0]).toBe('gateway-sidecar');
    }
    for (const c of Object.values(all)) {
      expect(Object.keys(envOf(c))).not.toContain('GATEWAY_ALLOW_UNSIGNED');
      expect(JSON.stringify(c.Command ?? [])).not.toContain('allow-unsigned');
    }
    expect(envOf(all.envoy).GATEWAY_TRUST_KMS_KEYS).toBeUndefined();
  });

  test('the proxy tasks reach KMS through an interface endpoint (their egress has no internet)', () => {
    template.hasResourceProperties('AWS::EC2::VPCEndpoint', {
      ServiceName: 'com.amazonaws.eu-west-1.kms',
      VpcEndpointType: 'Interface',
      PrivateDnsEnabled: true,
    });
  });

  test('the stack outputs the key ARN for gatewayctl (BundleSigningKeyArn)', () => {
    template.hasOutput('BundleSigningKeyArn', {
      Value: arnOf(keyId()),
      Export: { Name: 'Gateway-BundleSigningKeyArn' },
    });
  });
});

describe('bundle signing key rotation and overrides', () => {
  const nextKey = 'arn:aws:kms:eu-west-1:111111111111:key/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0';
  let rotated: Template;

  beforeAll(() => {
    ({ template: rotated } = gatewayStack({
      signingKeyAlias: 'alias/gateway-bundles-staging',
      additionalTrustedKeyArns: [nextKey],
    }));
  });

  test('additionalTrustedKeyArns join the sidecars\' trust list and their GetPublicKey, not the signers\'', () => {
    const key = resourceId(rotated, 'AWS::KMS::Key', 'BundleSigningKey');
    const all = containers(rotated);
    for (const name of ['sidecar', 'ratelimit-sidecar']) {
      expect(envOf(all[name]).GATEWAY_TRUST_KMS_KEYS).toEqual({ 'Fn::Join': [',', [arnOf(key), nextKey]] });
    }
    const taskRole = resourceId(rotated, 'AWS::IAM::Role', 'ProxyTaskTaskRole');
    const verify = allPolicyStatements(rotated).filter(
      (h) => h.holder === `iam:${taskRole}` && statementCovers(h.statement, 'kms:GetPublicKey'),
    );
    expect(verify).toHaveLength(1);
    expect(verify[0].statement.Action).toBe('kms:GetPublicKey');
    // (The policy minimizer sorts resources: compare as sets.)
    expect(verify[0].statement.Resource).toHaveLength(2);
    expect(verify[0].statement.Resource).toEqual(expect.arrayContaining([arnOf(key), nextKey]));
    // The signers still sign with the stack's key only.
    for (const { statement } of identityAllows(rotated, 'kms:Sign')) {
      expect(statement.Resource).toEqual(arnOf(key));
    }
    const lambdas = rotated.findResources('AWS::Lambda::Function');
    const reconcile = lambdas[resourceId(rotated, 'AWS::Lambda::Function', 'ReconcileFunction')];
    expect(reconcile.Properties.Environment.Variables.GATEWAY_SIGNING_KEY).toEqual(arnOf(key));
  });

  test('signingKeyAlias renames the alias', () => {
    rotated.hasResourceProperties('AWS::KMS::Alias', { AliasName: 'alias/gateway-bundles-staging' });
    rotated.resourceCountIs('AWS::KMS::Alias', 1);
  });

  test('a trusted key that is not a key ARN is refused at synth, naming the entry', () => {
    expect(() => gatewayStack({ additionalTrustedKeyArns: [nextKey, 'alias/gateway-bundles-next'] })).toThrow(
      /^additionalTrustedKeyArns\[1\]: "alias\/gateway-bundles-next" is not a KMS key ARN/,
    );
  });
});
