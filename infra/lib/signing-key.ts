import { Fn, RemovalPolicy, Token } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';

/** The alias the Rust signer falls back to when `GATEWAY_SIGNING_KEY` is unset. */
export const DEFAULT_SIGNING_KEY_ALIAS = 'alias/gateway-bundles';

/** The signer's key (KMS key id, ARN or alias): the reconcile function and `gatewayctl` read it. */
export const SIGNING_KEY_ENV = 'GATEWAY_SIGNING_KEY';

/** The sidecars' trust list: comma-separated KMS key ARNs whose public keys they fetch at start. */
export const TRUST_KEYS_ENV = 'GATEWAY_TRUST_KMS_KEYS';

/** Sid of the key policy statement that keeps `kms:Sign` to the signers. */
export const ONLY_SIGNERS_SID = 'OnlyReconcilerAndBreakGlassSign';

export interface BundleSigningKeyProps {
  /** Default `alias/gateway-bundles` (the signer's default). */
  readonly aliasName?: string;
  /**
   * Key ARNs the sidecars trust besides this key, for a rotation: a bundle signed by any of
   * them is delivered. Same region as the proxies (their KMS endpoint is the region's).
   */
  readonly additionalTrustedKeyArns?: string[];
}

/**
 * The asymmetric key `bundle.json` is signed with (ECDSA P-256, `ECDSA_SHA_256` over the
 * bundle's digest). The reconciler signs every publish and the break-glass role signs kill
 * switches and restores; the sidecars verify every bundle against the public keys of
 * `trustedKeyArns` before delivering it, so a bundle written by anyone else is never served.
 *
 * KMS does not rotate asymmetric keys. A rotation is a new key that the sidecars trust first
 * (`additionalTrustedKeyArns`, i.e. `GATEWAY_TRUST_KMS_KEYS`, deployed and every task replaced)
 * before anything signs with it; the old key leaves the trust list only once no bundle a proxy
 * may still be handed (the live one, the restore points) is signed by it.
 */
export class BundleSigningKey extends Construct {
  readonly key: kms.Key;
  /** This key's ARN first, then `additionalTrustedKeyArns`. */
  readonly trustedKeyArns: string[];

  constructor(scope: Construct, id: string, props: BundleSigningKeyProps = {}) {
    super(scope, id);
    const additional = props.additionalTrustedKeyArns ?? [];
    additional.forEach((arn, i) => {
      if (!Token.isUnresolved(arn) && !KEY_ARN.test(arn)) {
        throw new Error(
          `additionalTrustedKeyArns[${i}]: "${arn}" is not a KMS key ARN (arn:<partition>:kms:<region>:<account>:key/<id>); ` +
            'the sidecars fetch public keys by key ARN, not by alias or id',
        );
      }
    });
    this.key = new kms.Key(this, 'Key', {
      description: 'Signs the gateway config bundles (bundle.json); the proxies verify each bundle with its public key.',
      keySpec: kms.KeySpec.ECC_NIST_P256,
      keyUsage: kms.KeyUsage.SIGN_VERIFY,
      alias: props.aliasName ?? DEFAULT_SIGNING_KEY_ALIAS,
      // Asymmetric keys cannot rotate automatically (see the class comment for a rotation).
      enableKeyRotation: false,
      // The restore points in the bucket are signed with it: losing it makes them unservable.
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.trustedKeyArns = [this.key.keyArn, ...additional];
  }

  /** `GATEWAY_TRUST_KMS_KEYS`: the trusted key ARNs, comma separated. */
  get trustList(): string {
    return Fn.join(',', this.trustedKeyArns);
  }

  /**
   * The only principals that may sign: each gets `kms:Sign` and `kms:GetPublicKey` on this key,
   * and the key policy denies `kms:Sign` to every other principal. An explicit deny in the key
   * policy beats any allow in an IAM policy or a grant, so an admin-ish role elsewhere in the
   * account cannot sign a bundle (the account keeps administering the key: the deny is
   * `kms:Sign` only, and changing the key policy is itself an audited administrative act).
   * Call it once, with every signer.
   */
  allowOnlySigners(signers: iam.IRole[]): void {
    if (signers.length === 0) {
      throw new Error('allowOnlySigners: at least one signer (the reconcile function) is needed');
    }
    for (const role of signers) {
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          sid: 'SignBundles',
          actions: ['kms:Sign', 'kms:GetPublicKey'],
          resources: [this.key.keyArn],
        }),
      );
    }
    this.key.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: ONLY_SIGNERS_SID,
        effect: iam.Effect.DENY,
        principals: [new iam.AnyPrincipal()],
        actions: ['kms:Sign'],
        resources: ['*'],
        conditions: { ArnNotEquals: { 'aws:PrincipalArn': signers.map((r) => r.roleArn) } },
      }),
    );
  }

  /** What a verifier needs: `kms:GetPublicKey` on every trusted key, nothing more. */
  grantVerify(role: iam.IRole): void {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'VerifyBundles',
        actions: ['kms:GetPublicKey'],
        resources: this.trustedKeyArns,
      }),
    );
  }
}

const KEY_ARN = /^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[A-Za-z0-9-]+$/;
