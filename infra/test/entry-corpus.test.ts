import * as fs from 'fs';
import * as path from 'path';
import { checkEntry, CheckOptions } from '../lib/entry-checks';

/**
 * The differential corpus (docs/design.md#registration-entry): thousands of entries that
 * render/tests/entry_corpus.rs mutated from every file of render/tests/corpus, each with every
 * problem the Rust checks report, in order, under each settings profile. The synth-time checks
 * must report exactly the same ordered list of (field, reason) for every case.
 *
 * Each input is the text the construct sends to the register function (`JSON.stringify` of the
 * entry), which is also the text the Rust verdict was taken on. Outside the corpus, because they
 * are not pure checks of one entry:
 * - the backend name's DNS answer (`check_resolved`: the register function and the reconciler
 *   resolve the name; a synth has no view of the VPC's resolver);
 * - conflicts with other teams' hosts and paths (the registry's guard rows), registry bounds
 *   (`GATEWAY_MAX_ENTRIES_PER_TEAM`, `GATEWAY_MAX_ROUTES`) and the owner of an entry;
 * - the operators' backend restrictions (`GATEWAY_BACKEND_DOMAINS`, `GATEWAY_BACKEND_CIDRS`),
 *   which only the register function knows;
 * - document text the construct never writes: bytes that are not UTF-8, a byte-order mark,
 *   duplicate keys, comments and other syntax errors (render/tests/check_corpus.rs keeps them).
 */
type Found = [string, string][];
interface Case {
  readonly id: string;
  readonly input: string;
  readonly problems: Found;
  /** Profiles whose verdict differs from the default profile's. */
  readonly profiles?: Record<string, Found>;
}
interface Corpus {
  readonly profiles: Record<string, { baseDomain: string; allowLoopbackBackends: boolean }>;
  readonly cases: Case[];
}

const corpus: Corpus = JSON.parse(fs.readFileSync(path.join(__dirname, 'entry-corpus.json'), 'utf8'));
/** How many differences a failure prints (`ENTRY_CORPUS_SHOW=50 npx jest entry-corpus` for more). */
const SHOWN = Number(process.env.ENTRY_CORPUS_SHOW ?? 5);

test('the corpus is there, large, and each input is what JSON.stringify writes', () => {
  expect(corpus.cases.length).toBeGreaterThanOrEqual(3000);
  expect(Object.keys(corpus.profiles)).toContain('default');
  const notStringified = corpus.cases.filter((c) => JSON.stringify(JSON.parse(c.input)) !== c.input);
  expect(notStringified.map((c) => c.id)).toEqual([]);
});

test.each(Object.keys(corpus.profiles))('the synth-time checks report what the Rust checks report, profile %s', (name) => {
  const profile = corpus.profiles[name];
  // The construct's `baseDomain` is optional; absent, the checks run as Rust's with "".
  const options: CheckOptions = {
    baseDomain: profile.baseDomain === '' ? undefined : profile.baseDomain,
    allowLoopbackBackends: profile.allowLoopbackBackends,
  };
  const differences: string[] = [];
  for (const c of corpus.cases) {
    const expected = c.profiles?.[name] ?? c.problems;
    const got: Found = checkEntry(JSON.parse(c.input), options).map((p) => [p.field, p.reason]);
    if (JSON.stringify(got) !== JSON.stringify(expected)) {
      differences.push(showDifference(c, expected, got));
    }
  }
  if (differences.length > 0) {
    throw new Error(
      `${differences.length} of ${corpus.cases.length} cases differ from the Rust checks (profile ${name}); ` +
        `the first ${Math.min(SHOWN, differences.length)}:\n\n${differences.slice(0, SHOWN).join('\n\n')}`,
    );
  }
});

function showDifference(c: Case, expected: Found, got: Found): string {
  const line = ([field, reason]: [string, string]) => `${field}: ${reason}`;
  const at = expected.findIndex((p, i) => got[i] === undefined || line(p) !== line(got[i]));
  const first = at < 0 ? expected.length : at;
  const input = c.input.length > 400 ? `${c.input.slice(0, 400)}… (${c.input.length} characters)` : c.input;
  return [
    `case ${c.id}`,
    `  input:  ${input}`,
    `  rust (${expected.length}):`,
    ...expected.map((p, i) => `    ${i === first ? '>' : ' '} ${line(p)}`),
    `  typescript (${got.length}):`,
    ...got.map((p, i) => `    ${i === first ? '>' : ' '} ${line(p)}`),
  ].join('\n');
}
