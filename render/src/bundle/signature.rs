//! Who vouches for a bundle (docs/design.md#bundle-signature): an ECDSA P-256 signature over
//! the SHA-256 digest of its manifest, made by a KMS key (`ECC_NIST_P256`, `ECDSA_SHA_256`),
//! checked against the public keys a reader was given.

use p256::ecdsa::signature::hazmat::PrehashVerifier;
use p256::ecdsa::{Signature as EcdsaSignature, VerifyingKey};
use p256::pkcs8::{DecodePublicKey, EncodePublicKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// KMS's name for the one algorithm a bundle is signed with.
pub const SIGNING_ALGORITHM: &str = "ECDSA_SHA_256";

/// `signature.json` in a bundle: what signed its manifest. `key` is what the signer called its
/// key (a KMS key ARN): shown to operators, never trusted; a reader's own keys decide.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    pub algorithm: String,
    pub key: String,
    /// The DER-encoded ECDSA signature, base64 (standard alphabet, padded), as KMS Sign returns
    /// it before its own base64.
    pub signature: String,
}

impl Signature {
    pub fn new(key: impl Into<String>, der: &[u8]) -> Signature {
        use base64::Engine;
        Signature {
            algorithm: SIGNING_ALGORITHM.to_string(),
            key: key.into(),
            signature: base64::engine::general_purpose::STANDARD.encode(der),
        }
    }
}

/// A public key a reader trusts, with the name it was given by (a file, a KMS key ARN).
#[derive(Debug, Clone)]
pub struct TrustedKey {
    pub name: String,
    /// `sha256:` and the first 16 hex digits of the digest of the key's SubjectPublicKeyInfo:
    /// how status and history name the key that verified a version.
    pub fingerprint: String,
    key: VerifyingKey,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("{name}: not a P-256 public key (PEM SubjectPublicKeyInfo, as KMS GetPublicKey returns): {reason}")]
    Unreadable { name: String, reason: String },
}

impl TrustedKey {
    /// A PEM `PUBLIC KEY` (SubjectPublicKeyInfo), as `gatewayctl public-key` writes it.
    pub fn from_pem(name: impl Into<String>, pem: &str) -> Result<TrustedKey, KeyError> {
        let name = name.into();
        match VerifyingKey::from_public_key_pem(pem.trim()) {
            Ok(key) => Ok(TrustedKey::of(name, key)),
            Err(e) => Err(KeyError::Unreadable {
                name,
                reason: e.to_string(),
            }),
        }
    }

    /// DER SubjectPublicKeyInfo, as KMS GetPublicKey returns it.
    pub fn from_der(name: impl Into<String>, der: &[u8]) -> Result<TrustedKey, KeyError> {
        let name = name.into();
        match VerifyingKey::from_public_key_der(der) {
            Ok(key) => Ok(TrustedKey::of(name, key)),
            Err(e) => Err(KeyError::Unreadable {
                name,
                reason: e.to_string(),
            }),
        }
    }

    fn of(name: String, key: VerifyingKey) -> TrustedKey {
        let der = key
            .to_public_key_der()
            .map(|d| d.as_bytes().to_vec())
            .unwrap_or_default();
        let digest = Sha256::digest(&der);
        let fingerprint = format!("sha256:{}", hex(&digest[..8]));
        TrustedKey {
            name,
            fingerprint,
            key,
        }
    }

    /// The key as PEM, as `gatewayctl public-key --out` writes it.
    pub fn to_pem(&self) -> String {
        self.key
            .to_public_key_pem(p256::pkcs8::LineEnding::LF)
            .unwrap_or_default()
    }
}

/// The keys a reader trusts, and whether it takes an unsigned bundle (local runs, and the
/// transition of a gateway that has no signing key yet).
#[derive(Debug, Clone, Default)]
pub struct Trust {
    pub keys: Vec<TrustedKey>,
    pub allow_unsigned: bool,
}

/// Who vouched for a bundle that was accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signer {
    /// Verified with the trusted key of this name and fingerprint; `stated` is the key the
    /// signature says made it.
    Key {
        name: String,
        fingerprint: String,
        stated: String,
    },
    /// No signature, taken because unsigned bundles are allowed.
    Unsigned,
}

impl std::fmt::Display for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Signer::Key {
                name, fingerprint, ..
            } => write!(f, "signed, verified with {name} ({fingerprint})"),
            Signer::Unsigned => f.write_str("unsigned (allowed)"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("bundle is unsigned, and unsigned bundles are not allowed (no --allow-unsigned)")]
    Unsigned,
    #[error("signature.json: algorithm {0:?} is not {SIGNING_ALGORITHM}")]
    Algorithm(String),
    #[error("signature.json: the signature is not base64 DER ECDSA: {0}")]
    Malformed(String),
    #[error("signature by {stated:?} does not verify with any trusted key ({trusted})")]
    NoTrustedKey { stated: String, trusted: String },
}

impl Trust {
    /// Judges `signature` over the digest of `manifest`'s bytes.
    pub fn judge(
        &self,
        manifest: &[u8],
        signature: Option<&Signature>,
    ) -> Result<Signer, SignatureError> {
        let Some(signature) = signature else {
            return if self.allow_unsigned {
                Ok(Signer::Unsigned)
            } else {
                Err(SignatureError::Unsigned)
            };
        };
        if signature.algorithm != SIGNING_ALGORITHM {
            return Err(SignatureError::Algorithm(signature.algorithm.clone()));
        }
        let der = {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(&signature.signature)
                .map_err(|e| SignatureError::Malformed(e.to_string()))?
        };
        let parsed =
            EcdsaSignature::from_der(&der).map_err(|e| SignatureError::Malformed(e.to_string()))?;
        let digest = manifest_digest(manifest);
        for key in &self.keys {
            if key.key.verify_prehash(&digest, &parsed).is_ok() {
                return Ok(Signer::Key {
                    name: key.name.clone(),
                    fingerprint: key.fingerprint.clone(),
                    stated: signature.key.clone(),
                });
            }
        }
        let trusted = if self.keys.is_empty() {
            "none given".to_string()
        } else {
            self.keys
                .iter()
                .map(|k| format!("{} {}", k.name, k.fingerprint))
                .collect::<Vec<_>>()
                .join(", ")
        };
        Err(SignatureError::NoTrustedKey {
            stated: signature.key.clone(),
            trusted,
        })
    }
}

/// What is signed: the SHA-256 digest of the manifest's bytes (KMS Sign, `MessageType: DIGEST`).
pub fn manifest_digest(manifest: &[u8]) -> [u8; 32] {
    Sha256::digest(manifest).into()
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::hazmat::PrehashSigner;
    use p256::ecdsa::SigningKey;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_slice(&[seed; 32]).expect("a valid scalar")
    }

    fn sign(key: &SigningKey, manifest: &[u8]) -> Signature {
        let sig: EcdsaSignature = key
            .sign_prehash(&manifest_digest(manifest))
            .expect("signs");
        Signature::new("arn:aws:kms:test", sig.to_der().as_bytes())
    }

    fn trust(keys: &[&SigningKey]) -> Trust {
        Trust {
            keys: keys
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    let pem = k
                        .verifying_key()
                        .to_public_key_pem(p256::pkcs8::LineEnding::LF)
                        .expect("pem");
                    TrustedKey::from_pem(format!("key{i}.pem"), &pem).expect("reads")
                })
                .collect(),
            allow_unsigned: false,
        }
    }

    #[test]
    fn a_signature_verifies_with_its_key_among_several_and_nothing_else() {
        let (a, b) = (key(1), key(2));
        let manifest = b"{\"format\": 2}\n";
        let signed = sign(&b, manifest);
        match trust(&[&a, &b]).judge(manifest, Some(&signed)) {
            Ok(Signer::Key { name, .. }) => assert_eq!(name, "key1.pem"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            trust(&[&a]).judge(manifest, Some(&signed)),
            Err(SignatureError::NoTrustedKey { .. })
        ));
        assert!(matches!(
            trust(&[&a, &b]).judge(b"{\"format\": 3}\n", Some(&signed)),
            Err(SignatureError::NoTrustedKey { .. })
        ));
        assert_eq!(
            trust(&[&a]).judge(manifest, None),
            Err(SignatureError::Unsigned)
        );
        let mut lenient = trust(&[&a]);
        lenient.allow_unsigned = true;
        assert_eq!(lenient.judge(manifest, None), Ok(Signer::Unsigned));
        // Allowing unsigned bundles never lets a bad signature through.
        assert!(lenient.judge(manifest, Some(&sign(&b, manifest))).is_err());
    }

    #[test]
    fn malformed_signatures_and_keys_are_named() {
        let a = key(1);
        let manifest = b"m";
        let mut wrong = sign(&a, manifest);
        wrong.algorithm = "RSASSA_PSS_SHA_256".into();
        assert!(matches!(
            trust(&[&a]).judge(manifest, Some(&wrong)),
            Err(SignatureError::Algorithm(_))
        ));
        let mut garbled = sign(&a, manifest);
        garbled.signature = "not base64!".into();
        assert!(matches!(
            trust(&[&a]).judge(manifest, Some(&garbled)),
            Err(SignatureError::Malformed(_))
        ));
        let err = TrustedKey::from_pem("k.pem", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
            .unwrap_err();
        assert!(err.to_string().starts_with("k.pem: not a P-256 public key"), "{err}");
    }
}
