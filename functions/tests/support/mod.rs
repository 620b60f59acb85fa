//! A reconcile harness on moto's server: table, versioned bucket, CloudWatch, real Envoy, and
//! wrappers over the adapter traits that inject faults.
#![allow(dead_code)]

use gateway_adapters::metrics::CloudWatchMetrics;
use gateway_functions::reconcile::{reconcile, Outcome, ReconcileConfig, ReconcileError};
use gateway_adapters::registry::{
    DynamoRegistry, PublishedState, Registry, RegistryError, RegistrySnapshot,
};
use gateway_adapters::store::{
    s3_client, BundleHead, BundleVersion, ConfigStore, PutBundle, S3Store, StoreError,
};
use gateway_render::check::Policy;
use gateway_render::{Entry, RenderConfig, Route};
use gateway_testkit::{envoy_bin, unique_name, MotoServer};
use gateway_validator::{EnvoyOptions, ValidateOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub const DOMAIN: &str = "api.example.com";

pub fn entry(team: &str, service: &str, host: &str, paths: &[&str]) -> Entry {
    Entry {
        team: team.into(),
        service: service.into(),
        host: host.into(),
        backend: "http://127.0.0.1:9".into(),
        protocol: Default::default(),
        canary: None,
        health_check: None,
        routes: paths
            .iter()
            .map(|p| Route {
                path: (*p).into(),
                methods: None,
                limits: vec![],
                timeout: None,
                ..Default::default()
            })
            .collect(),
    }
}

#[derive(Default)]
pub struct Faults {
    pub fail_put: AtomicBool,
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
    async fn read_all_entries(&self) -> Result<RegistrySnapshot, RegistryError> {
        if self.faults.fail_read.load(Ordering::SeqCst) {
            return Err(RegistryError::Retryable("injected: table throttled".into()));
        }
        self.inner.read_all_entries().await
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
            return Err(StoreError::Aws("injected: upload failed".into()));
        }
        self.inner.put_bundle(put).await
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
        let registry = DynamoRegistry::new(dynamo.clone(), unique_name("registry"), DOMAIN)
            .with_policy(policy.clone());
        registry
            .create_table_if_absent()
            .await
            .expect("create table");
        let store = S3Store::new(s3_client(&conf), unique_name("bundles"));
        store
            .create_bucket_if_absent()
            .await
            .expect("create bucket");
        let cloudwatch = aws_sdk_cloudwatch::Client::new(&conf);
        let metrics = CloudWatchMetrics::new(cloudwatch.clone());
        let cfg = ReconcileConfig {
            render: RenderConfig::new(DOMAIN),
            policy,
            validate: ValidateOptions {
                envoy: EnvoyOptions::new(envoy_bin()),
                skip_envoy: false,
            },
            backends: Default::default(),
            bounds: Default::default(),
            quarantine: Default::default(),
        };
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
        use aws_sdk_dynamodb::types::AttributeValue as A;
        self.dynamo
            .put_item()
            .table_name(self.registry.table())
            .item("pk", A::S(format!("ENTRY#{}", entry.id())))
            .item("sk", A::S("ENTRY".into()))
            .item(
                "entry",
                A::S(serde_json::to_string(entry).expect("entry json")),
            )
            .item("revision", A::N("1".into()))
            .item("updated_at", A::N("0".into()))
            .send()
            .await
            .expect("raw put");
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
