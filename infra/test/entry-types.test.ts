import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';
import { ENTRY_SCHEMA } from '../lib/entry-schema';

/**
 * lib/entry.ts's hand-written interfaces against the entry schema the Rust types generate: each
 * interface has exactly the schema object's fields, optional exactly where the schema does not
 * require them, and each string union exactly the schema's enum.
 */
type Schema = { [key: string]: unknown };
const source = ts.createSourceFile('entry.ts', fs.readFileSync(path.join(__dirname, '..', 'lib', 'entry.ts'), 'utf8'), ts.ScriptTarget.ES2022, true);
const defs = ENTRY_SCHEMA.$defs as unknown as Record<string, Schema>;
const limit = defs.Limit.anyOf as Schema[];

function interfaceFields(name: string): Record<string, boolean> {
  const decl = source.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === name);
  if (!decl) throw new Error(`lib/entry.ts has no interface ${name}`);
  return Object.fromEntries(
    decl.members.filter(ts.isPropertySignature).map((m) => [(m.name as ts.Identifier).text, m.questionToken !== undefined]),
  );
}

function schemaFields(object: Schema): Record<string, boolean> {
  const required = new Set((object.required as string[] | undefined) ?? []);
  return Object.fromEntries(Object.keys(object.properties as Schema).map((k) => [k, !required.has(k)]));
}

function unionMembers(name: string): string[] {
  const decl = source.statements.find((s): s is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(s) && s.name.text === name);
  if (!decl || !ts.isUnionTypeNode(decl.type)) throw new Error(`lib/entry.ts has no union type ${name}`);
  return decl.type.types.map((t) => ((t as ts.LiteralTypeNode).literal as ts.StringLiteral).text);
}

test.each<[string, Schema]>([
  ['Entry', ENTRY_SCHEMA as unknown as Schema],
  ['Route', defs.Route],
  ['BurstLimit', limit[0]],
  ['GlobalLimit', limit[1]],
  ['Retries', defs.Retries],
  ['HeaderChanges', defs.HeaderChanges],
  ['Cors', defs.Cors],
  ['Canary', defs.Canary],
  ['CanaryHeader', defs.CanaryHeader],
  ['HealthCheck', defs.HealthCheck],
  ['Redirect', defs.Redirect],
  ['HeaderMatch', defs.HeaderMatch],
  ['QueryMatch', defs.QueryMatch],
  ['RewriteTo', defs.RewriteTo],
  ['Mirror', defs.Mirror],
  ['WeightedBackend', defs.WeightedBackend],
  ['Clients', defs.Clients],
  ['RouteAuth', defs.RouteAuth],
  ['JwtProvider', defs.JwtProvider],
  ['Jwks', defs.Jwks],
  ['Jwk', defs.Jwk],
  ['Rollout', defs.Rollout],
])('interface %s has the schema\'s fields, optional where the schema does', (name, object) => {
  expect(interfaceFields(name)).toEqual(schemaFields(object));
});

test('every object of the schema has its interface', () => {
  const objects = Object.entries(defs).filter(([, d]) => d.type === 'object').map(([name]) => name).sort();
  expect(objects).toEqual(['Canary', 'CanaryHeader', 'Clients', 'Cors', 'HeaderChanges', 'HeaderMatch', 'HealthCheck', 'Jwk', 'Jwks', 'JwtProvider', 'Mirror', 'QueryMatch', 'Redirect', 'Retries', 'RewriteTo', 'Rollout', 'Route', 'RouteAuth', 'WeightedBackend']);
  expect(limit).toHaveLength(2);
});

test('the string unions are the schema\'s enums', () => {
  expect(unionMembers('Per')).toEqual(defs.Per.enum);
  expect(unionMembers('Unit')).toEqual(defs.Unit.enum);
  expect(unionMembers('Protocol')).toEqual((defs.Protocol.oneOf as Schema[]).map((o) => o.const));
});
