import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { Construct } from 'constructs';
import { METRICS, METRIC_NAMESPACE } from './metrics';

export interface GatewayDashboardProps {
  /** The alarms shown next to the graphs (docs/design.md#metrics-and-alarms). */
  readonly alarms: Record<string, cloudwatch.Alarm>;
}

/**
 * One CloudWatch dashboard with the gateway's metrics next to its alarms: publishes and routes,
 * validation failures, quarantined entries (total and per team), drift, reconcile failures,
 * proxy config rejections and limiter errors.
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
  }
}
