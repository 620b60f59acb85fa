import { Stack, StackProps } from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { ExposeOnGateway, ExposeOnGatewayProps, GatewayServiceToken } from './expose-on-gateway';

export interface ExampleTeamStackProps extends StackProps {
  readonly serviceToken: GatewayServiceToken;
  readonly baseDomain: string;
}

/** The sample entry of docs/design.md#registration-entry: one service's host, backend and routes. */
export function sampleEntry(): Omit<ExposeOnGatewayProps, 'serviceToken'> {
  return {
    team: 'billing',
    service: 'invoices-api',
    host: 'invoices',
    backend: 'https://invoices.internal.example:8443',
    routes: [
      { path: '/invoices', methods: ['GET'], limits: [{ per: 'client-ip', requests: 100, every: 'minute' }] },
      {
        path: '/invoices',
        methods: ['POST'],
        limits: [{ per: 'route', requests: 500, every: 'minute' }, { burst: 20 }],
      },
      { path: '/invoices/export', limits: [{ per: 'header', header: 'x-api-key', requests: 10, every: 'hour' }] },
    ],
  };
}

/** What a team writes in its own stack: the sample entry of docs/design.md#registration-entry. */
export class ExampleTeamStack extends Stack {
  constructor(scope: Construct, id: string, props: ExampleTeamStackProps) {
    super(scope, id, props);
    new ExposeOnGateway(this, 'InvoicesApi', {
      serviceToken: props.serviceToken,
      baseDomain: props.baseDomain,
      ...sampleEntry(),
    });
  }
}
