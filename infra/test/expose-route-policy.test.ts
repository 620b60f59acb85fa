import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { EntryRejected } from '../lib/entry-checks';
import { ExposeOnGateway, ExposeOnGatewayProps } from '../lib/expose-on-gateway';
import { Route } from '../lib/entry';
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

test('a POST route retrying on 5xx fails synth, naming the field', () => {
  const post: Route = { path: '/invoices', methods: ['POST'], retries: { attempts: 2, on: ['5xx'] } };
  expect(() => synth(props([post]))).toThrow(EntryRejected);
  expect(() => synth(props([post]))).toThrow(
    'routes[0].retries.on[0]: "5xx" retries a POST route; a route accepting POST may retry only on connect-failure or refused-stream (the backend never saw the request)',
  );
});

test('raised operator bounds are honoured at synth when the team passes them', () => {
  const long: Route = { path: '/reports', methods: ['GET'], timeout: '2m', retries: { attempts: 5, on: ['5xx'] } };
  expect(() => synth(props([long]))).toThrow("routes[0].timeout: is 120s; at most 60s (the operators' maximum route timeout)");
  expect(() => synth(props([long], { maxRouteTimeoutMs: 180_000, maxRetryAttempts: 5 }))).not.toThrow();
});
