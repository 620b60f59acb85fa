import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { Construct } from 'constructs';
import { METRICS, METRIC_NAMESPACE, REQUEST_METRICS } from './metrics';

export interface GatewayDashboardProps {
  /** The alarms shown next to the graphs (docs/design.md#metrics-and-alarms). */
  readonly alarms: Record<string, cloudwatch.Alarm>;
}

/**
 * One CloudWatch dashboard with the gateway's metrics next to its alarms: publishes and routes,
 * validation failures, quarantined entries (total and per team), drift, reconcile failures,
 * proxy config rejections and limiter errors, delivery lag per proxy; and the traffic per team and service
 * (docs/design.md#request-metrics), through CloudWatch SEARCH because teams register at run time.
 */
export class GatewayDashboard extends Construct {
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: GatewayDashboardProps) {
    super(scope, id);
    const sum = (name: string, label = name) =>
      new cloudwatch.Metric({
        namespace: METRIC_NAMESPACE,
        metricName: name,
        statistic: cloudwatch.Stats.SUM,
        period: Duration.minutes(1),
        label,
      });
    const graph = (title: string, metrics: cloudwatch.IMetric[]) =>
      new cloudwatch.GraphWidget({ title, left: metrics, width: 8, height: 6 });
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      defaultInterval: Duration.hours(3),
    });
    this.dashboard.addWidgets(
      new cloudwatch.AlarmStatusWidget({
        title: 'Alarms',
        alarms: Object.values(props.alarms),
        width: 24,
        height: 3,
      }),
    );
    this.dashboard.addWidgets(
      graph('Publishes', [sum(METRICS.published)]),
      graph('Routes rendered', [
        new cloudwatch.Metric({
          namespace: METRIC_NAMESPACE,
          metricName: METRICS.routesRendered,
          statistic: cloudwatch.Stats.MAXIMUM,
          period: Duration.minutes(1),
        }),
      ]),
      graph('Validation failures and reconcile failures', [sum(METRICS.validationFailed), sum(METRICS.reconcileFailed)]),
    );
    this.dashboard.addWidgets(
      graph('Quarantined entries (total and per team)', [
        sum(METRICS.entryQuarantined, 'total'),
        new cloudwatch.MathExpression({
          expression: `SEARCH('{${METRIC_NAMESPACE},Team} MetricName="${METRICS.entryQuarantined}"', 'Sum', 60)`,
          label: '',
          period: Duration.minutes(1),
        }),
      ]),
      graph('Drift', [sum(METRICS.configDrift)]),
      graph('Proxy config rejections and limiter errors', [sum(METRICS.proxyConfigRejected), sum(METRICS.rateLimiterErrors)]),
    );
    const lag = (statistic: string, label: string) =>
      new cloudwatch.Metric({
        namespace: METRIC_NAMESPACE,
        metricName: METRICS.deliveryLagSeconds,
        statistic,
        period: Duration.minutes(1),
        label,
      });
    this.dashboard.addWidgets(
      graph('Capacity used (% of the memory envelope; alarm at 80)', [
        new cloudwatch.Metric({
          namespace: METRIC_NAMESPACE,
          metricName: METRICS.capacityUsed,
          statistic: cloudwatch.Stats.MAXIMUM,
          period: Duration.minutes(5),
        }),
      ]),
      // One datum per proxy and delivery: the maximum is the slowest proxy, the sample count
      // how many proxies delivered. `gatewayctl status` lists each proxy's own lag.
      new cloudwatch.GraphWidget({
        title: 'Delivery lag per proxy (s, publish to delivery)',
        left: [lag(cloudwatch.Stats.MAXIMUM, 'slowest proxy'), lag(cloudwatch.Stats.AVERAGE, 'average'), lag(cloudwatch.Stats.MINIMUM, 'fastest proxy')],
        right: [lag(cloudwatch.Stats.SAMPLE_COUNT, 'deliveries')],
        width: 16,
        height: 6,
      }),
    );
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
      graph('Requests per team/service', [search(REQUEST_METRICS.requests, 'Sum', 'Requests')]),
      graph('5xx per team/service', [search(REQUEST_METRICS.responses5xx, 'Sum', '5xx')]),
      graph('p99 latency (ms, worst proxy) per team/service', [search(REQUEST_METRICS.latencyP99, 'Maximum', 'p99')]),
    );
  }
}
