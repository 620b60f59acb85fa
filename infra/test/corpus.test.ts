import * as fs from 'fs';
import * as path from 'path';
import { checkEntry } from '../lib/entry-checks';
import { REPO_ROOT } from '../lib/pins';

/**
 * The Rust registration checks' corpus (render/tests/corpus): the synth-time port must agree
 * with the authoritative checks on every entry a construct could send. Files that are not JSON
 * documents (binary, UTF-16, YAML) cannot come from typed construct props and are left to the
 * Rust side, and so are rules about JSON *text* that the construct never produces: it builds the
 * document with JSON.stringify, which writes no duplicate keys, no exponents or `.0` on
 * integers, and valid UTF-8.
 */
const TEXT_LEVEL = [
  'duplicate-key-backend-hidden.json',
  'duplicate-key-host.json',
  'duplicate-key-nested.json',
  'garbage-latin1.json',
  'garbage-lone-surrogate.json',
  'requests-exponent.json',
  'requests-float-integral.json',
  'requests-out-of-f64-range.json',
];
const corpus = path.join(REPO_ROOT, 'render', 'tests', 'corpus');
const options = { baseDomain: 'api.example.com' };

function parse(file: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(fs.readFileSync(file, 'utf8')) };
  } catch {
    return { ok: false };
  }
}

const good = fs.readdirSync(path.join(corpus, 'good')).filter((f) => f.endsWith('.json'));
const expectations: Record<string, string[]> = JSON.parse(fs.readFileSync(path.join(corpus, 'expectations.json'), 'utf8'));
const bad = Object.entries(expectations).filter(
  ([file]) => !TEXT_LEVEL.includes(file) && parse(path.join(corpus, 'bad', file)).ok,
);

test('the corpus is there and not trivially small', () => {
  expect(good.length).toBeGreaterThanOrEqual(5);
  expect(bad.length).toBeGreaterThanOrEqual(150);
  // A text-level case that disappears from the corpus must leave this list too.
  for (const file of TEXT_LEVEL) {
    expect(expectations[file]).toBeDefined();
  }
});

test.each(good)('good/%s passes', (file) => {
  const parsed = parse(path.join(corpus, 'good', file));
  expect(parsed.ok).toBe(true);
  expect(checkEntry((parsed as { value: unknown }).value, options)).toEqual([]);
});

test.each(bad)('bad/%s is rejected naming %j', (file, fields) => {
  const parsed = parse(path.join(corpus, 'bad', file)) as { value: unknown };
  const named = checkEntry(parsed.value, options).map((p) => p.field);
  expect(named).toEqual(expect.arrayContaining(fields));
});
