//! A reconcile harness on moto's server: table, versioned bucket, CloudWatch, real Envoy, and
//! wrappers over the adapter traits that inject faults.

pub use crate::registry as registry_support;

use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use gateway_adapters::metrics::CloudWatchMetrics;
use gateway_adapters::registry::{
    DynamoRegistry, PublishedState, Registry, RegistryError, RegistrySnapshot, RenderRecord,
    Verdict,
};
use gateway_adapters::store::{
    s3_client, BundleHead, BundleVersion, ConfigStore, PutBundle, S3Store, StoreError,
};
use gateway_control::reconcile::{
    reconcile, BuildIdentity, Outcome, ReconcileConfig, ReconcileError, Stage,
};
use gateway_render::bounds::Bounds;
use gateway_render::check::Policy;
use gateway_render::{Entry, RenderConfig};
use crate::{envoy_bin, unique_name, MotoServer};
use gateway_validator::{EnvoyOptions, ValidateOptions};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub const DOMAIN: &str = "api.example.com";

/// A valid entry (the registry tests' own) whose backend is a closed loopback port of its
/// team's own: the reconcile tests never send traffic to it.
pub fn entry(team: &str, service: &str, host: &str, paths: &[&str]) -> Entry {
    Entry {
        backend: crate::closed_backend(team),
        ..registry_support::entry(team, service, host, paths)
    }
}

/// The stage and reason of an outcome the test expects to be a rejection.
pub fn rejected(outcome: &Outcome) -> (&Stage, &str) {
    match outcome {
        Outcome::Rejected { stage, reason, .. } => (stage, reason),
        other => panic!("expected a rejection, got {other}"),
    }
}

/// The version id and hash of an outcome the test expects to be a publish.
pub fn published(outcome: &Outcome) -> (&String, &String) {
    match outcome {
        Outcome::Published {
            version_id, hash, ..
        } => (version_id, hash),
        other => panic!("expected a publish, got {other}"),
    }
}

/// A fresh table (checked by `policy`, reached through `dynamo`) and a fresh versioned bucket on
/// `moto`, both named from `prefix`.
pub async fn table_and_bucket(
    moto: &MotoServer,
    dynamo: aws_sdk_dynamodb::Client,
    policy: &Policy,
    prefix: &str,
) -> (DynamoRegistry, S3Store) {
    let conf = moto.sdk_config().await;
    let registry =
        DynamoRegistry::new(dynamo, unique_name(prefix), DOMAIN).with_policy(policy.clone());
    registry
        .create_table_if_absent()
        .await
        .expect("create table");
    let signer = crate::signing::new_signer(moto).await;
    let bucket = unique_name(prefix);
    crate::signing::trust_for(&bucket, crate::signing::trust_file(&signer).await);
    let store = S3Store::new(s3_client(&conf), bucket).with_signer(signer);
    store
        .create_bucket_if_absent()
        .await
        .expect("create bucket");
    (registry, store)
}

/// The reconcile function's configuration as the tests run it: the pinned Envoy validates every
/// run; backends and quarantine limits as deployed by default; the build named `tests` (a test
/// that stands for another build gives another name).
pub fn reconcile_config(render: RenderConfig, policy: Policy, bounds: Bounds) -> ReconcileConfig {
    ReconcileConfig {
        render,
        policy,
        validate: ValidateOptions {
            envoy: EnvoyOptions::new(envoy_bin()),
            skip_envoy: false,
        },
        backends: Default::default(),
        bounds,
        quarantine: Default::default(),
        build: BuildIdentity::named("tests"),
        rollout: Default::default(),
    }
}

#[derive(Default)]
pub struct Faults {
    pub fail_put: AtomicBool,
    /// The PUT lands, and its answer is lost (the caller sees a failure).
    pub lose_put_answer: AtomicBool,
    /// The PUT lands, and the SDK's retry of it meets its own write (412).
    pub put_answer_412: AtomicBool,
    pub fail_read: AtomicBool,
    pub fail_record: AtomicBool,
}

pub struct FaultyRegistry<'a> {
    inner: &'a DynamoRegistry,
    faults: Arc<Faults>,
}

impl Registry for FaultyRegistry<'_> {
    async fn read_statuses(
        &self,
    ) -> Result<
        std::collections::BTreeMap<String, gateway_adapters::registry::EntryStatus>,
        RegistryError,
    > {
        self.inner.read_statuses().await
    }
    async fn write_statuses(
        &self,
        rows: &[gateway_adapters::registry::EntryStatus],
    ) -> Result<(), RegistryError> {
        self.inner.write_statuses(rows).await
    }
    async fn read_statuses_digest(&self) -> Result<Option<String>, RegistryError> {
        self.inner.read_statuses_digest().await
    }
    async fn record_statuses_digest(&self, digest: Option<&str>) -> Result<(), RegistryError> {
        self.inner.record_statuses_digest(digest).await
    }
    async fn read_render_record(&self) -> Result<Option<RenderRecord>, RegistryError> {
        self.inner.read_render_record().await
    }
    async fn record_render(&self, record: &RenderRecord) -> Result<(), RegistryError> {
        self.inner.record_render(record).await
    }
    async fn read_pending(&self) -> Result<Option<String>, RegistryError> {
        self.inner.read_pending().await
    }
    async fn record_pending(&self, hash: &str) -> Result<(), RegistryError> {
        self.inner.record_pending(hash).await
    }
    async fn read_verdicts(&self) -> Result<Vec<Verdict>, RegistryError> {
        self.inner.read_verdicts().await
    }
    async fn record_verdicts(&self, verdicts: &[Verdict]) -> Result<(), RegistryError> {
        self.inner.record_verdicts(verdicts).await
    }
    async fn read_rollouts(&self) -> Result<gateway_adapters::registry::rollout::Rollouts, RegistryError> {
        self.inner.read_rollouts().await
    }
    async fn record_rollouts(&self, r: &gateway_adapters::registry::rollout::Rollouts) -> Result<(), RegistryError> {
        self.inner.record_rollouts(r).await
    }
    async fn read_all_entries(&self) -> Result<RegistrySnapshot, RegistryError> {
        if self.faults.fail_read.load(Ordering::SeqCst) {
            return Err(RegistryError::Retryable("injected: table throttled".into()));
        }
        self.inner.read_all_entries().await
    }
    async fn read_totals(&self) -> Result<Option<gateway_render::bounds::Totals>, RegistryError> {
        self.inner.read_totals().await
    }
    async fn record_totals(
        &self,
        totals: &gateway_render::bounds::Totals,
    ) -> Result<(), RegistryError> {
        self.inner.record_totals(totals).await
    }
    async fn read_state(&self) -> Result<Option<PublishedState>, RegistryError> {
        self.inner.read_state().await
    }
    async fn record_published(
        &self,
        expected: Option<&PublishedState>,
        next: &PublishedState,
    ) -> Result<(), RegistryError> {
        if self.faults.fail_record.load(Ordering::SeqCst) {
            return Err(RegistryError::Retryable(
                "injected: table unavailable".into(),
            ));
        }
        self.inner.record_published(expected, next).await
    }
}

pub struct FaultyStore<'a> {
    inner: &'a S3Store,
    faults: Arc<Faults>,
}

impl ConfigStore for FaultyStore<'_> {
    async fn head_live(&self) -> Result<Option<BundleHead>, StoreError> {
        self.inner.head_live().await
    }
    async fn head_version(&self, version_id: &str) -> Result<BundleHead, StoreError> {
        self.inner.head_version(version_id).await
    }
    async fn get_version(&self, version_id: &str) -> Result<Vec<u8>, StoreError> {
        self.inner.get_version(version_id).await
    }
    async fn put_bundle(&self, put: PutBundle<'_>) -> Result<String, StoreError> {
        if self.faults.fail_put.load(Ordering::SeqCst) {
            return Err(StoreError::Refused("injected: upload failed".into()));
        }
        let landed = self.inner.put_bundle(put).await?;
        if self.faults.lose_put_answer.load(Ordering::SeqCst) {
            return Err(StoreError::Refused(format!("injected: the answer for {landed} was lost")));
        }
        if self.faults.put_answer_412.load(Ordering::SeqCst) {
            return Err(StoreError::PreconditionFailed);
        }
        Ok(landed)
    }
    async fn keep_failed(&self, key: &str, body: &[u8]) -> Result<(), StoreError> {
        self.inner.keep_failed(key, body).await
    }
    async fn list_versions(&self, limit: usize) -> Result<Vec<BundleVersion>, StoreError> {
        self.inner.list_versions(limit).await
    }
    async fn restore_version(&self, version_id: &str, hash: &str) -> Result<String, StoreError> {
        self.inner.restore_version(version_id, hash).await
    }
    async fn signing_key(
        &self,
    ) -> Result<Option<gateway_render::bundle::TrustedKey>, StoreError> {
        self.inner.signing_key().await
    }
}

/// The item the register function writes for `entry` (revision 1), without its guard rows.
fn entry_item(entry: &Entry) -> HashMap<String, AttributeValue> {
    HashMap::from([
        (
            "pk".into(),
            AttributeValue::S(format!("ENTRY#{}", entry.id())),
        ),
        ("sk".into(), AttributeValue::S("ENTRY".into())),
        (
            "entry".into(),
            AttributeValue::S(serde_json::to_string(entry).expect("entry json")),
        ),
        ("revision".into(), AttributeValue::N("1".into())),
        ("updated_at".into(), AttributeValue::N("0".into())),
    ])
}

/// Writes the entries straight into the table in batches, as the entry rows the register
/// function writes (past its checks and transactions: moto's server leaks memory on
/// transactions, so a large registry is loaded this way). The host and path guard rows a
/// registration also writes are not; the reconcile run's scan filters them out.
pub async fn load_entries(dynamo: &aws_sdk_dynamodb::Client, table: &str, entries: &[Entry]) {
    for chunk in entries.chunks(25) {
        let mut requests: Vec<WriteRequest> = chunk
            .iter()
            .map(|e| {
                let put = PutRequest::builder()
                    .set_item(Some(entry_item(e)))
                    .build()
                    .expect("put request");
                WriteRequest::builder().put_request(put).build()
            })
            .collect();
        // Puts of whole rows, so sending one again is harmless: a batch that exceeds the SDK's
        // attempt timeout on a loaded moto server (large registries) is sent again.
        let mut timeouts = 0;
        while !requests.is_empty() {
            let sent = dynamo
                .batch_write_item()
                .request_items(table, requests.clone())
                .send()
                .await;
            let out = match sent {
                Ok(out) => out,
                Err(e)
                    if timeouts < 3
                        && matches!(e, aws_sdk_dynamodb::error::SdkError::TimeoutError(_)) =>
                {
                    timeouts += 1;
                    continue;
                }
                Err(e) => panic!("batch write: {e:?}"),
            };
            requests = out
                .unprocessed_items
                .and_then(|mut m| m.remove(table))
                .unwrap_or_default();
        }
    }
}

pub struct Harness {
    pub moto: MotoServer,
    pub registry: DynamoRegistry,
    pub store: S3Store,
    pub metrics: CloudWatchMetrics,
    pub cloudwatch: aws_sdk_cloudwatch::Client,
    pub dynamo: aws_sdk_dynamodb::Client,
    pub cfg: ReconcileConfig,
    pub faults: Arc<Faults>,
}

impl Harness {
    /// One moto server per harness: moto keeps a copy of the table per transaction.
    pub async fn start() -> Harness {
        let moto = MotoServer::start();
        let conf = moto.sdk_config().await;
        let dynamo = aws_sdk_dynamodb::Client::new(&conf);
        let policy = Policy::new(DOMAIN, true);
        let (registry, store) = table_and_bucket(&moto, dynamo.clone(), &policy, "registry").await;
        let cloudwatch = aws_sdk_cloudwatch::Client::new(&conf);
        let metrics = CloudWatchMetrics::new(cloudwatch.clone());
        let cfg = reconcile_config(RenderConfig::new(DOMAIN), policy, Bounds::default());
        Harness {
            moto,
            registry,
            store,
            metrics,
            cloudwatch,
            dynamo,
            cfg,
            faults: Arc::default(),
        }
    }

    pub async fn register(&self, entry: Entry) {
        self.registry
            .register(&entry)
            .await
            .unwrap_or_else(|e| panic!("register {}: {e}", entry.id()));
    }

    pub async fn reconcile(&self) -> Outcome {
        reconcile(&self.registry, &self.store, &self.metrics, &self.cfg)
            .await
            .expect("reconcile run")
    }

    /// A run's whole report (outcome, capacity, quarantine), for tests of what it measures.
    pub async fn reconcile_report(&self) -> gateway_control::reconcile::RunReport {
        gateway_control::reconcile::reconcile_report(
            &self.registry,
            &self.store,
            &self.metrics,
            &self.cfg,
        )
        .await
        .expect("reconcile run")
    }

    pub async fn reconcile_faulty(&self) -> Result<Outcome, ReconcileError> {
        let registry = FaultyRegistry {
            inner: &self.registry,
            faults: self.faults.clone(),
        };
        let store = FaultyStore {
            inner: &self.store,
            faults: self.faults.clone(),
        };
        reconcile(&registry, &store, &self.metrics, &self.cfg).await
    }

    /// One `reconcile_faulty` run with `fault` (a flag of `self.faults`) on for just that run.
    pub async fn reconcile_with_fault(
        &self,
        fault: &AtomicBool,
    ) -> Result<Outcome, ReconcileError> {
        fault.store(true, Ordering::SeqCst);
        let outcome = self.reconcile_faulty().await;
        fault.store(false, Ordering::SeqCst);
        outcome
    }

    /// The live bundle's head; fails the test when nothing is live.
    pub async fn live(&self) -> BundleHead {
        self.store.head_live().await.expect("head").expect("live")
    }

    /// How many bundle versions the bucket holds (the newest 50).
    pub async fn version_count(&self) -> usize {
        self.store.list_versions(50).await.expect("versions").len()
    }

    /// Writes an entry item straight into the table, past the register function.
    pub async fn put_raw_entry(&self, entry: &Entry) {
        self.dynamo
            .put_item()
            .table_name(self.registry.table())
            .set_item(Some(entry_item(entry)))
            .send()
            .await
            .expect("raw put");
    }

    /// Another registry on the harness's table with its policy, for a test to give its own
    /// settings (bounds, publish wait).
    pub fn registry_view(&self) -> DynamoRegistry {
        DynamoRegistry::new(self.dynamo.clone(), self.registry.table(), DOMAIN)
            .with_policy(self.cfg.policy.clone())
    }

    pub async fn get_object(&self, key: &str) -> String {
        let out = self
            .store
            .client()
            .get_object()
            .bucket(self.store.bucket())
            .key(key)
            .send()
            .await
            .unwrap_or_else(|e| {
                panic!("get {key}: {}", aws_sdk_s3::error::DisplayErrorContext(&e))
            });
        let bytes = out.body.collect().await.expect("body").into_bytes();
        // bundle.json travels gzip-compressed; other objects as they are.
        let bytes = gateway_adapters::store::encoding::decode(bytes.to_vec(), 1 << 30)
            .unwrap_or_else(|e| panic!("get {key}: {e}"));
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Metric names recorded in namespace `Gateway` on moto's CloudWatch.
    pub async fn metric_names(&self) -> Vec<String> {
        let out = self
            .cloudwatch
            .list_metrics()
            .namespace("Gateway")
            .send()
            .await
            .expect("list metrics");
        out.metrics()
            .iter()
            .filter_map(|m| m.metric_name().map(str::to_string))
            .collect()
    }
}
