//! JSON Web Tokens for the authentication tests: RS256 and ES256 signers, their public keys as
//! JWKs, and tokens over any claims (docs/design.md#authentication). The gateway never signs a
//! token; only the tests mint them, to be judged by the real Envoy.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{
    EcdsaKeyPair, KeyPair, RsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING, RSA_PKCS1_SHA256,
};
use serde_json::{json, Value};
use std::time::{SystemTime, UNIX_EPOCH};

/// A 2048-bit RSA key made for these tests alone (PKCS#8, base64): ring signs RSA but does not
/// generate RSA keys. It is trusted nowhere but in the tests' own JWKS.
const TEST_RSA_PKCS8: [&str; 19] = [
    "MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQCbtqXwP8+DHM+a3/mPCKAZyu9vg5GBR1ijgDuH5b",
    "v7rpqhNmcsNX0eqhbHYPQ2lzUq2ebuNY6S3CdptIvA/Rxz8ku72jwXQ3nhl/PyVcFyZt0i1Q9dYkw1yVOvEpU+974A",
    "/UyQxgm3Vhbgjru5JTgEfAlJY80FO60Q99is4/WC5bZYyUBaP5MpSwAD+KtR5DkJUjC2lxo/3w8Mm9x8GtjHe41t/p",
    "Lj+5X8JkAXpoHRp2G6YBMxaCbdZkTBdHrLD/GTTkgplyqreLHZNpJTqQlpJadPvd12ZzQgWdQPxsnDZHuw3EkRJpCw",
    "DuDciLuWvRKUPJ1JvmszGZ7+0jHSTOcZAgMBAAECggEADi7tX3xYeP9bU6aaEzK8bo0DETvBOa7XfpEUGxVMcajeUd",
    "fkPu0iV/QzPfbxV7WfNKeDdugu8+aUunalEi+b8127E0HWHmJZjDhskoLIK5T+CImyrBVjjrSnaDd/m6wyROHNoxQ+",
    "11HCpLKrm7otp47qw6IRDyx336dLt7fN6Z3BdXA5ihahGf2RwBDhcdCfTWV+lslokWJn9oZyfcqf+v6gWOt2/6ZO3+",
    "v7HXMhwPSMX4zOSJQM49MU33NTPteDMaY4wDL4XWqQYiC20x0YnAVvsKfHZoK3cIFZjs2Yfjd9UN0FwezdpRSz+r3v",
    "5lhPE7FOfz8acT+ePHHyML+6dwKBgQDUGR5+tXL0hkaMdXUa+jBew+DSYsDbGYfj2NPD5P/tqlx3H7J5gSUnyxKDvQ",
    "BDmjNaFx0SVoXQalrWKDDjldyiWtDubb2GGtN7O5xF7SytxKeESC5Q4NFCFOYKcSRjA/pyRCkS+Sey32ghikfFNFQc",
    "Iwu3J+378YPbkQruIBbI+wKBgQC78cJYDFvIL9fiR3LLpMjs52JRCulhJQ4ZjuTZeajrWDDDLATfCV33ZC4sLcgMgn",
    "IQgrndheTTjKBnpmZRnsr4M2PWo4ZsIjhsbXthcVFKzic41Ru3HQ2pAK0Ds0xXMEmSXJUUY30drC85pvRdRilYu9Y2",
    "ERs3pCGh4+r1yaw7+wKBgHSjz8Js9OgGg/uwiJMqbblfzV7F0jtrwfCKiILdh+Vi3/De7J6naBCHPApYwTFsNrtfpK",
    "w2Cub/5i6J8cDm5Gwgt2+3yBdc31qRALLv6LczQ9CahWYTDOFjbtLlP9Z4FJ4MX+5AORXEiJaRXkDUM0E6ALJb8iOw",
    "wQvZqwIjgYRLAoGAAcZvynsbZtGk3VtFZ00AJNSupgtPVv6Nmoox+SfgA5EKrN0+koi5HXwRv5MTH6Mfxq4laUU5ex",
    "IJ9dCpiL3SNvPtTnqu61iLZeLG1o3Gcclur2e74kfg+Case6t23h/zofFD6zRhWyVkMMw15Kej/lWP2WTh9+2R78CC",
    "WJ32BX8CgYAuLAHW4kXGGBzWmiAQxQn5s+nF/8JBuLXNmInjUhogP6nAs2OMCpgKnJFA3Tq0GoIhqarYh7W9mTXfxb",
    "eDCgErg9hqJqBPog9VMZ8WlzqvUbo2HVaxlyfU1S/4ZsBW0+naREpFr4zqr0MdGs3Q/YZvF1pWeAzD/AQ6nbWEtw62",
    "yw==",
];

enum Key {
    Rsa(RsaKeyPair),
    Ec(EcdsaKeyPair),
}

/// A key that signs tokens, named `kid` in their header and its JWK.
pub struct TokenSigner {
    key: Key,
    kid: String,
}

impl TokenSigner {
    /// The tests' RSA key (RS256).
    pub fn rsa(kid: &str) -> TokenSigner {
        let der = STANDARD.decode(TEST_RSA_PKCS8.concat()).expect("the test key is base64");
        let key = RsaKeyPair::from_pkcs8(&der).expect("the test key is an RSA PKCS#8 key");
        TokenSigner { key: Key::Rsa(key), kid: kid.to_string() }
    }

    /// A new P-256 key (ES256).
    pub fn ec(kid: &str) -> TokenSigner {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("a P-256 key");
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("reads back");
        TokenSigner { key: Key::Ec(key), kid: kid.to_string() }
    }

    /// The public key as a JWK (`kid`, `alg`, `use` included).
    pub fn jwk(&self) -> Value {
        match &self.key {
            Key::Rsa(k) => {
                let (n, e) = rsa_public_numbers(k.public_key().as_ref());
                json!({ "kty": "RSA", "kid": self.kid, "alg": "RS256", "use": "sig",
                        "n": URL_SAFE_NO_PAD.encode(n), "e": URL_SAFE_NO_PAD.encode(e) })
            }
            Key::Ec(k) => {
                let point = k.public_key().as_ref();
                json!({ "kty": "EC", "kid": self.kid, "alg": "ES256", "use": "sig", "crv": "P-256",
                        "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65]) })
            }
        }
    }

    /// A compact JWS over `claims`, signed by this key and naming it.
    pub fn token(&self, claims: &Value) -> String {
        self.token_named(claims, &self.kid)
    }

    /// As [`Self::token`], with `kid` in the header whatever this key is called (a forgery
    /// naming a trusted key).
    pub fn token_named(&self, claims: &Value, kid: &str) -> String {
        let alg = match self.key {
            Key::Rsa(_) => "RS256",
            Key::Ec(_) => "ES256",
        };
        let header = json!({ "alg": alg, "typ": "JWT", "kid": kid });
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let rng = SystemRandom::new();
        let signature = match &self.key {
            Key::Rsa(k) => {
                let mut sig = vec![0; k.public().modulus_len()];
                k.sign(&RSA_PKCS1_SHA256, &rng, input.as_bytes(), &mut sig).expect("signs");
                sig
            }
            Key::Ec(k) => k.sign(&rng, input.as_bytes()).expect("signs").as_ref().to_vec(),
        };
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A JWKS of these signers' public keys.
pub fn jwks(signers: &[&TokenSigner]) -> Value {
    json!({ "keys": signers.iter().map(|s| s.jwk()).collect::<Vec<_>>() })
}

/// `n` and `e` of a DER RSAPublicKey (SEQUENCE { INTEGER n, INTEGER e }), without leading zeros.
fn rsa_public_numbers(der: &[u8]) -> (Vec<u8>, Vec<u8>) {
    fn item(input: &[u8], tag: u8) -> (&[u8], &[u8]) {
        assert_eq!(input[0], tag, "DER tag");
        let (len, at) = match input[1] {
            l if l < 0x80 => (l as usize, 2),
            l => {
                let n = (l & 0x7f) as usize;
                let len = input[2..2 + n].iter().fold(0usize, |acc, b| acc * 256 + *b as usize);
                (len, 2 + n)
            }
        };
        (&input[at..at + len], &input[at + len..])
    }
    let (seq, _) = item(der, 0x30);
    let (n, rest) = item(seq, 0x02);
    let (e, _) = item(rest, 0x02);
    let strip = |b: &[u8]| b.iter().skip_while(|x| **x == 0).copied().collect::<Vec<u8>>();
    (strip(n), strip(e))
}
