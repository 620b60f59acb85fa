import * as fs from 'fs';
import * as path from 'path';

/** The repository root: image assets are built with it as context (see the root .dockerignore). */
export const REPO_ROOT = path.resolve(__dirname, '..', '..');

/**
 * The Envoy release, read from the one pin in the repo. The proxy image and the reconcile image
 * (which runs `envoy --mode validate`) are both built FROM envoyproxy/envoy at this version, so
 * what the reconciler validates is what the proxies run.
 */
export function envoyVersion(repoRoot: string = REPO_ROOT): string {
  const file = path.join(repoRoot, 'bootstrap', 'ENVOY_VERSION');
  const version = fs.readFileSync(file, 'utf8').trim();
  if (!/^\d+\.\d+\.\d+$/.test(version)) {
    throw new Error(`${file}: expected a version like 1.2.3, found "${version}"`);
  }
  return version;
}

/**
 * Paths never sent to a Docker build nor staged into cdk.out. The root .dockerignore says the
 * same for `docker build`; CDK's staging walks the context itself, so it is repeated here.
 */
export const IMAGE_CONTEXT_EXCLUDES = [
  'target',
  '.venv',
  '.git',
  '.gateway',
  'infra',
  '**/node_modules',
];

/**
 * Envoy's command-line arguments, one per line in `bootstrap/envoy.args`: the same file the
 * bootstrap's own tests and local runs read, so the proxy task cannot drift from them.
 */
export function envoyArgs(repoRoot: string = REPO_ROOT): string[] {
  const file = path.join(repoRoot, 'bootstrap', 'envoy.args');
  const args = fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
  if (!args.includes('--reject-unknown-dynamic-fields')) {
    throw new Error(`${file}: the gateway runs with --reject-unknown-dynamic-fields; it is missing`);
  }
  return args;
}
