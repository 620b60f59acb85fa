/**
 * Durations in entries: a whole number above 0 with the unit `ms`, `s` or `m`
 * (render/src/check/duration.rs).
 */

/** `parse_duration`: `"250ms"`, `"5s"`, `"2m"` → milliseconds; undefined when it is not one. */
export function parseDuration(s: string): number | undefined {
  let digits: string;
  let scale: number;
  if (s.endsWith('ms')) [digits, scale] = [s.slice(0, -2), 1];
  else if (s.endsWith('s')) [digits, scale] = [s.slice(0, -1), 1_000];
  else if (s.endsWith('m')) [digits, scale] = [s.slice(0, -1), 60_000];
  else return undefined;
  const wellFormed = digits.length > 0 && digits.length <= 9 && /^[0-9]+$/.test(digits) && !digits.startsWith('0');
  return wellFormed ? Number(digits) * scale : undefined;
}

/** `envoy_duration`: milliseconds as Envoy's JSON duration (`"5s"`, `"0.250s"`). */
export function envoyDuration(ms: number): string {
  const whole = Math.floor(ms / 1000);
  const frac = ms % 1000;
  return frac === 0 ? `${whole}s` : `${whole}.${String(frac).padStart(3, '0')}s`;
}
