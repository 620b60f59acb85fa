import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { Construct } from 'constructs';
import { METRIC_NAMESPACE, REQUEST_METRICS } from './metrics';

/**
 * Per-team traffic through the gateway (docs/design.md#request-metrics): requests, 5xx and p99
 * latency, one line per team and service. Teams register at run time, so the graphs use
 * CloudWatch SEARCH over the `Team`/`Service` dimensions instead of a fixed list.
 */
export class GatewayDashboard extends Construct {
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard');
    const search = (metric: string, stat: string, label: string) =>
      new cloudwatch.MathExpression({
        expression: `SEARCH('{${METRIC_NAMESPACE},Team,Service} MetricName="${metric}"', '${stat}', 60)`,
        label,
        usingMetrics: {},
      });
    this.dashboard.addWidgets(
      new cloudwatch.TextWidget({
        markdown: '## Traffic per team\nPublished by every proxy\'s sidecar; the access log (one JSON line per request) is in the proxy log group, stream prefix `envoy`.',
        width: 24,
        height: 2,
      }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Requests per team/service',
        left: [search(REQUEST_METRICS.requests, 'Sum', 'Requests')],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: '5xx per team/service',
        left: [search(REQUEST_METRICS.responses5xx, 'Sum', '5xx')],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'p99 latency (ms, worst proxy) per team/service',
        left: [search(REQUEST_METRICS.latencyP99, 'Maximum', 'p99')],
        width: 8,
      }),
    );
  }
}
