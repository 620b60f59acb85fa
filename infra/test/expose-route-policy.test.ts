import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Route } from '../lib/entry';
import { EntryRejected, ExposeOnGateway, ExposeOnGatewayProps } from '../lib/expose-on-gateway';
import { FULL_ROUTE_POLICY, testApp } from './helpers';

const FUNCTION_ARN = 'arn:aws:lambda:eu-west-1:111111111111:function:Gateway-RegisterFunction';

/** The route of docs/design.md#route-policy, with every field. */
const policyRoute: Route = {
  path: '/invoices',
  methods: ['GET'],
  ...FULL_ROUTE_POLICY,
};

function props(routes: Route[], extra: Partial<ExposeOnGatewayProps> = {}): ExposeOnGatewayProps {
  return {
    team: 'billing', service: 'invoices-api', host: 'invoices',
    backend: 'https://invoices.internal.example:8443', routes, serviceToken: FUNCTION_ARN, ...extra,
  };
}

function synth(p: ExposeOnGatewayProps): Template {
  const stack = new Stack(testApp(), 'Team');
  new ExposeOnGateway(stack, 'Invoices', p);
  return Template.fromStack(stack);
}

test('the route policy travels to the register function as written', () => {
  const resource = Object.values(synth(props([policyRoute])).findResources('Custom::GatewayRoute'))[0];
  expect(JSON.parse(resource.Properties.Entry).routes).toEqual([policyRoute]);
});

test('a malformed route policy fails synth, naming each field', () => {
  const bad = {
    path: '/invoices',
    retries: { attempts: 0, on: ['5XX'] },
    request_headers: { add: { 'x-team': 'billing\r\nx-admin: 1' }, remove: ['X-Debug'] },
    cors: { origins: [], credentials: 'yes' },
    websocket: 'true',
  } as unknown as Route;
  let error: unknown;
  try {
    synth(props([bad]));
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(EntryRejected);
  expect((error as EntryRejected).problems.map((p) => p.field)).toEqual([
    'routes[0].retries.attempts',
    'routes[0].retries.on[0]',
    'routes[0].request_headers.add.x-team',
    'routes[0].request_headers.remove[0]',
    'routes[0].cors.origins',
    'routes[0].cors.credentials',
    'routes[0].websocket',
  ]);
});
