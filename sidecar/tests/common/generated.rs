//! A generated registry at scale, loaded straight into moto's table: what the memory envelope
//! and the scale bench (`sidecar/benches/scale.rs`) measure.

use aws_sdk_dynamodb::types::{AttributeValue as A, PutRequest, WriteRequest};
use gateway_render::Entry;
use serde_json::json;

/// Entry `i` of a generated registry: `routes` routes under its own prefix, every limit kind
/// spread over them, one https backend on a private address (no DNS involved). Four entries
/// share each team's host.
pub fn generated(i: usize, routes: usize) -> Entry {
    let team = i / 4;
    let routes: Vec<_> = (0..routes)
        .map(|r| {
            let path = format!("/svc{i}/r{r}");
            match r % 5 {
                0 => json!({"path": path, "methods": ["GET"],
                            "limits": [{"per": "client-ip", "requests": 100, "every": "minute"}]}),
                1 => json!({"path": path, "methods": ["POST"],
                            "limits": [{"per": "route", "requests": 100, "every": "second"},
                                       {"burst": 20}]}),
                2 => json!({"path": path,
                            "limits": [{"per": "header", "header": "x-api-key",
                                        "requests": 100, "every": "hour"}]}),
                3 => json!({"path": path, "limits": [{"burst": 5}]}),
                _ => json!({"path": path}),
            }
        })
        .collect();
    serde_json::from_value(json!({
        "team": format!("team{team}"),
        "service": format!("svc{i}"),
        "host": format!("team{team}"),
        "backend": format!("https://10.{}.{}.{}:8443", i / 65536 % 256, i / 256 % 256, i % 256),
        "routes": routes,
    }))
    .expect("a generated entry parses")
}

/// Writes the entries straight into the table in batches, as the entry rows the register
/// function writes (its own path is timed separately; moto's server leaks memory on
/// transactions, so a large registry is loaded this way). The host guard rows a registration
/// also writes (one per host, a quarter of the entry rows here) are not; the reconcile run's
/// scan filters them out.
pub async fn load(dynamo: &aws_sdk_dynamodb::Client, table: &str, entries: &[Entry]) {
    for chunk in entries.chunks(25) {
        let mut requests: Vec<WriteRequest> = chunk
            .iter()
            .map(|e| {
                let put = PutRequest::builder()
                    .item("pk", A::S(format!("ENTRY#{}", e.id())))
                    .item("sk", A::S("ENTRY".into()))
                    .item("entry", A::S(serde_json::to_string(e).expect("entry json")))
                    .item("revision", A::N("1".into()))
                    .item("updated_at", A::N("0".into()))
                    .build()
                    .expect("put request");
                WriteRequest::builder().put_request(put).build()
            })
            .collect();
        while !requests.is_empty() {
            let out = dynamo
                .batch_write_item()
                .request_items(table, requests)
                .send()
                .await
                .expect("batch write");
            requests = out
                .unprocessed_items
                .and_then(|mut m| m.remove(table))
                .unwrap_or_default();
        }
    }
}

/// A kibibyte figure from `/proc/PID/status` (`VmRSS`, `VmHWM`).
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
