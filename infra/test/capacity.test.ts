import * as fs from 'fs';
import * as path from 'path';
import * as os from 'os';
import {
  CAPACITY_ALARM_PERCENT,
  DEFAULT_CAPACITY,
  HEADROOM,
  MEASURED,
  proxyTaskSize,
  reconcileMemoryMiB,
  StageCost,
  stageCost,
} from '../lib/capacity';
import { caCostShare, readUpstreamCa, SYSTEM_BUNDLE_CERTIFICATES, UPSTREAM_CA_PATH } from '../lib/upstream-ca';
import { gatewayStack, resourceId, UPSTREAM_CA_FIXTURE } from './helpers';

/** The measured rows of docs/benchmarks.md's "Memory envelope" section. */
interface Measured {
  routes: number;
  clusters: number;
  ca: string;
  reconcile: number;
  sidecar: number;
  envoy: number;
}

function measuredRows(): Measured[] {
  const doc = fs.readFileSync(path.join(__dirname, '../../docs/benchmarks.md'), 'utf8');
  const section = doc.split('## Memory envelope')[1]?.split('\n## ')[0];
  if (!section) {
    throw new Error('docs/benchmarks.md has no "Memory envelope" section');
  }
  const mib = (cell: string) => Number(cell.replace(' MiB', ''));
  return section
    .split('\n')
    .filter((l) => /^\| \d+ \| \d+ \|/.test(l))
    .map((l) => l.split('|').map((c) => c.trim()).slice(1, -1))
    .map((c) => ({
      routes: Number(c[0]),
      clusters: Number(c[1]),
      ca: c[2],
      reconcile: mib(c[4]),
      sidecar: mib(c[7]),
      envoy: mib(c[8]),
    }));
}

const rows = measuredRows();
/** The measurements' CA files: one certificate, or the system bundle. */
const share = (r: Measured) => (r.ca === 'system bundle' ? 1 : 1 / SYSTEM_BUNDLE_CERTIFICATES);
const fit = (c: StageCost, r: Measured) => stageCost(c, { routes: r.routes, clusters: r.clusters }, share(r));

describe('the memory envelope', () => {
  test('the benchmark table holds the measured sizes, system CA included', () => {
    expect(rows.length).toBeGreaterThanOrEqual(6);
    expect(rows.some((r) => r.routes >= 50_000 && r.ca === 'system bundle')).toBe(true);
    expect(rows.some((r) => r.routes >= 50_000 && r.ca === 'one certificate')).toBe(true);
  });

  test.each(rows.map((r) => [`${r.routes} routes, ${r.clusters} clusters, ${r.ca}`, r] as const))(
    'the model covers the measured peaks: %s',
    (_, r) => {
      expect(fit(MEASURED.reconcile, r)).toBeGreaterThanOrEqual(r.reconcile);
      expect(fit(MEASURED.envoy, r)).toBeGreaterThanOrEqual(r.envoy);
      expect(fit(MEASURED.sidecar, r)).toBeGreaterThanOrEqual(r.sidecar);
    },
  );

  test('a stack sized for the largest measured registry gives every stage its measured peak', () => {
    const largest = rows.reduce((a, b) => (a.reconcile > b.reconcile ? a : b));
    const cap = { routes: largest.routes, clusters: largest.clusters };
    const { template } = gatewayStack({ capacity: cap, upstreamCa: 'system' });
    const reconcileId = resourceId(template, 'AWS::Lambda::Function', 'ReconcileFunction');
    const fn = template.toJSON().Resources[reconcileId].Properties;
    expect(fn.MemorySize).toBeGreaterThanOrEqual(largest.reconcile * HEADROOM);
    const tasks = Object.values(template.findResources('AWS::ECS::TaskDefinition'));
    expect(tasks).toHaveLength(1);
    const task = tasks[0].Properties;
    const proxyPeak = 2 * largest.envoy + 2 * largest.sidecar + MEASURED.rateLimitMiB;
    expect(Number(task.Memory)).toBeGreaterThanOrEqual(proxyPeak * HEADROOM);
    expect(Number(task.Memory)).toBe(proxyTaskSize(cap).memoryMiB);
    expect(Number(task.Cpu)).toBe(proxyTaskSize(cap).cpu);
  });

  test('the default stack is sized for the default capacity and both functions enforce it', () => {
    const { template } = gatewayStack();
    const functions = template.toJSON().Resources;
    const reconcile = functions[resourceId(template, 'AWS::Lambda::Function', 'ReconcileFunction')].Properties;
    const fixtureShare = caCostShare(readUpstreamCa(UPSTREAM_CA_FIXTURE));
    expect(reconcile.MemorySize).toBe(reconcileMemoryMiB(DEFAULT_CAPACITY, fixtureShare));
    for (const prefix of ['ReconcileFunction', 'RegisterFunction']) {
      const env = functions[resourceId(template, 'AWS::Lambda::Function', prefix)].Properties.Environment.Variables;
      expect(env.GATEWAY_MAX_ROUTES).toBe(String(DEFAULT_CAPACITY.routes));
      expect(env.GATEWAY_MAX_CLUSTERS).toBe(String(DEFAULT_CAPACITY.clusters));
    }
    // The same defaults the Rust side uses when the settings are unset.
    const bounds = fs.readFileSync(path.join(__dirname, '..', '..', 'render', 'src', 'bounds.rs'), 'utf8');
    const constant = (name: string) => Number(new RegExp(`${name}: usize = ([\\d_]+);`).exec(bounds)?.[1].replace(/_/g, ''));
    expect(constant('DEFAULT_MAX_ROUTES')).toBe(DEFAULT_CAPACITY.routes);
    expect(constant('DEFAULT_MAX_CLUSTERS')).toBe(DEFAULT_CAPACITY.clusters);
  });

  test('a larger capacity grows the function and the task; one past what AWS offers fails the synth', () => {
    const small = reconcileMemoryMiB(DEFAULT_CAPACITY);
    const big = reconcileMemoryMiB({ routes: 100_000, clusters: 10_000 });
    expect(big).toBeGreaterThan(small);
    expect(proxyTaskSize({ routes: 100_000, clusters: 10_000 }).memoryMiB).toBeGreaterThan(
      proxyTaskSize(DEFAULT_CAPACITY).memoryMiB,
    );
    expect(() => reconcileMemoryMiB({ routes: 200_000, clusters: 40_000 })).toThrow(/at most 10240 MiB/);
    expect(() => proxyTaskSize({ routes: 20_000, clusters: 60_000 })).toThrow(/at most 30720 MiB/);
    expect(() => reconcileMemoryMiB({ routes: 0, clusters: 10 })).toThrow(/capacity.routes: 0/);
  });

  test('CapacityUsed alarms at 80 percent', () => {
    const { template } = gatewayStack();
    const alarms = template.findResources('AWS::CloudWatch::Alarm', {
      Properties: { Namespace: 'Gateway', MetricName: 'CapacityUsed' },
    });
    const props = Object.values(alarms).map((a) => a.Properties);
    expect(props).toHaveLength(1);
    expect(props[0].Threshold).toBe(CAPACITY_ALARM_PERCENT);
    expect(CAPACITY_ALARM_PERCENT).toBe(80);
    expect(props[0].ComparisonOperator).toBe('GreaterThanOrEqualToThreshold');
    expect(props[0].AlarmActions).toHaveLength(1);
  });
});

describe('the upstream CA', () => {
  /** The synthesized template and the Docker images' build arguments (the asset manifest). */
  const assembly = (upstreamCa: string) => {
    const { stack } = gatewayStack({ upstreamCa });
    const cloud = (stack.node.root as import('aws-cdk-lib').App).synth();
    const artifact = cloud.getStackByName(stack.stackName);
    const manifest = JSON.parse(fs.readFileSync(path.join(cloud.directory, `${stack.stackName}.assets.json`), 'utf8'));
    const images = Object.values(manifest.dockerImages ?? {}).map((i) => {
      const source = (i as { source: { dockerFile?: string; dockerBuildArgs?: Record<string, string> } }).source;
      return { file: source.dockerFile, buildArgs: source.dockerBuildArgs ?? {} };
    });
    return { stack, artifact, images };
  };

  test('an operator CA file is built into both images at one path the rendered clusters name', () => {
    const { stack, artifact, images } = assembly(UPSTREAM_CA_FIXTURE);
    const template = artifact!.template;
    const fnId = Object.keys(template.Resources).find(
      (id) => id.startsWith('ReconcileFunction') && template.Resources[id].Type === 'AWS::Lambda::Function',
    )!;
    expect(template.Resources[fnId].Properties.Environment.Variables.GATEWAY_UPSTREAM_CA_FILE).toBe(UPSTREAM_CA_PATH);
    const pem = fs.readFileSync(UPSTREAM_CA_FIXTURE, 'utf8').trim() + '\n';
    const withCa = images.filter((a) => a.buildArgs.UPSTREAM_CA === pem).map((a) => a.file).sort();
    expect(withCa).toEqual(['bootstrap/Dockerfile.envoy', 'functions/Dockerfile.reconcile']);
    expect(stack.stackName).toBe('Gateway');
  });

  test("'system' keeps the images' bundle and sizes for it", () => {
    const { artifact, images } = assembly('system');
    const template = artifact!.template;
    const fnId = Object.keys(template.Resources).find(
      (id) => id.startsWith('ReconcileFunction') && template.Resources[id].Type === 'AWS::Lambda::Function',
    )!;
    const fn = template.Resources[fnId].Properties;
    expect(fn.Environment.Variables.GATEWAY_UPSTREAM_CA_FILE).toBeUndefined();
    expect(fn.MemorySize).toBe(reconcileMemoryMiB(DEFAULT_CAPACITY, 1));
    expect(reconcileMemoryMiB(DEFAULT_CAPACITY, 1)).toBeGreaterThan(
      reconcileMemoryMiB(DEFAULT_CAPACITY, caCostShare(readUpstreamCa(UPSTREAM_CA_FIXTURE))),
    );
    expect(images.length).toBeGreaterThanOrEqual(2);
    expect(images.every((a) => a.buildArgs.UPSTREAM_CA === undefined)).toBe(true);
  });

  test('a missing, empty or key-holding CA file is refused naming upstreamCa', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'upstream-ca-'));
    const write = (name: string, text: string) => {
      const p = path.join(dir, name);
      fs.writeFileSync(p, text);
      return p;
    };
    const cert = fs.readFileSync(UPSTREAM_CA_FIXTURE, 'utf8');
    expect(() => readUpstreamCa(undefined)).toThrow(/^upstreamCa is required/);
    expect(() => readUpstreamCa('')).toThrow(/^upstreamCa is required/);
    expect(() => readUpstreamCa(path.join(dir, 'absent.pem'))).toThrow(/^upstreamCa: cannot read/);
    expect(() => readUpstreamCa(write('empty.pem', 'not a certificate\n'))).toThrow(/holds no PEM certificate/);
    expect(() =>
      readUpstreamCa(write('key.pem', cert + '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n')),
    ).toThrow(/BEGIN PRIVATE KEY.*a private key never belongs here/);
    expect(() => readUpstreamCa(write('cut.pem', cert.replace('-----END CERTIFICATE-----', '')))).toThrow(/without its END line/);
    expect(() => readUpstreamCa(write('huge.pem', cert.repeat(200)))).toThrow(/bytes; at most 65536/);
    expect(readUpstreamCa(write('two.pem', cert + cert)).certificates).toBe(2);
    expect(() => gatewayStack({ upstreamCa: '' })).toThrow(/^upstreamCa is required/);
  });
});
