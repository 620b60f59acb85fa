import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { CAPACITY_ALARM_PERCENT } from './capacity';
import { METRIC_NAMESPACE, METRICS } from './metrics';

export interface GatewayAlarmsProps {
  readonly register: lambda.IFunction;
  readonly reconcile: lambda.IFunction;
  readonly key: kms.IKey;
}

interface CounterAlarm {
  readonly id: string;
  readonly metric: string;
  readonly description: string;
  readonly period: Duration;
  readonly evaluationPeriods: number;
  readonly datapointsToAlarm: number;
}

/**
 * One alarm per operator-facing signal, all to one SNS topic. The Gateway metrics are counters
 * emitted only when something happens, so missing data is "fine", never "breaching".
 */
export class GatewayAlarms extends Construct {
  readonly topic: sns.Topic;
  readonly alarms: Record<string, cloudwatch.Alarm> = {};

  constructor(scope: Construct, id: string, props: GatewayAlarmsProps) {
    super(scope, id);
    this.topic = new sns.Topic(this, 'Topic', {
      displayName: 'Gateway alarms',
      masterKey: props.key,
      enforceSSL: true,
    });
    // CloudWatch publishes alarm notifications to the encrypted topic with the key.
    props.key.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsEncrypt',
        actions: ['kms:GenerateDataKey*', 'kms:Decrypt'],
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        resources: ['*'],
      }),
    );
    const action = new actions.SnsAction(this.topic);

    const counters: CounterAlarm[] = [
      {
        id: 'ValidationFailed',
        metric: METRICS.validationFailed,
        description: 'A render failed validation and was not published; the render and Envoy stderr are under failed/.',
        period: Duration.minutes(1),
        evaluationPeriods: 1,
        datapointsToAlarm: 1,
      },
      {
        id: 'ConfigDrift',
        metric: METRICS.configDrift,
        description: 'The live bundle is not the one the reconciler published; publishing is paused until restore or resume.',
        period: Duration.minutes(1),
        evaluationPeriods: 1,
        datapointsToAlarm: 1,
      },
      {
        id: 'ReconcileFailed',
        metric: METRICS.reconcileFailed,
        description: 'Reconcile runs are failing (registry or bucket unreachable, or a bug); new registrations are not going live.',
        period: Duration.minutes(1),
        evaluationPeriods: 5,
        datapointsToAlarm: 3,
      },
      {
        id: 'ProxyConfigRejected',
        metric: METRICS.proxyConfigRejected,
        description: 'An Envoy task rejected a delivered file; that task is serving its previous config.',
        period: Duration.minutes(1),
        evaluationPeriods: 1,
        datapointsToAlarm: 1,
      },
      {
        id: 'RateLimiterErrors',
        metric: METRICS.rateLimiterErrors,
        description: 'The global rate limiter is failing; requests pass unlimited (failure mode allow).',
        period: Duration.minutes(5),
        evaluationPeriods: 1,
        datapointsToAlarm: 1,
      },
      {
        id: 'EntryQuarantined',
        metric: METRICS.entryQuarantined,
        description: 'A reconcile run set an entry aside and published the rest; the Team dimension and failed/quarantine/{team}/{service}/reason.txt name it and why.',
        period: Duration.minutes(5),
        evaluationPeriods: 1,
        datapointsToAlarm: 1,
      },
    ];
    for (const c of counters) {
      this.add(
        c.id,
        new cloudwatch.Alarm(this, c.id, {
          alarmDescription: c.description,
          metric: new cloudwatch.Metric({
            namespace: METRIC_NAMESPACE,
            metricName: c.metric,
            statistic: cloudwatch.Stats.SUM,
            period: c.period,
          }),
          threshold: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: c.evaluationPeriods,
          datapointsToAlarm: c.datapointsToAlarm,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        }),
        action,
      );
    }

    // The memory envelope (docs/design.md#memory-envelope): every run reports how full it is.
    this.add(
      'CapacityUsed',
      new cloudwatch.Alarm(this, 'CapacityUsed', {
        alarmDescription:
          'The registry fills 80 % or more of the memory envelope the gateway is sized for (routes or https clusters); ' +
          'at 100 % registration refuses growth. Raise the stack\'s capacity setting (it resizes the functions and proxies) or prune entries.',
        metric: new cloudwatch.Metric({
          namespace: METRIC_NAMESPACE,
          metricName: METRICS.capacityUsed,
          statistic: cloudwatch.Stats.MAXIMUM,
          period: Duration.minutes(5),
        }),
        threshold: CAPACITY_ALARM_PERCENT,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
        datapointsToAlarm: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      action,
    );
    this.add(
      'RegisterErrors',
      props.register.metricErrors({ period: Duration.minutes(5), statistic: cloudwatch.Stats.SUM }).createAlarm(this, 'RegisterErrors', {
        alarmDescription: 'The register function errored (not a rejection: rejections are answers).',
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      action,
    );
    this.add(
      'ReconcileErrors',
      props.reconcile.metricErrors({ period: Duration.minutes(1), statistic: cloudwatch.Stats.SUM }).createAlarm(this, 'ReconcileErrors', {
        alarmDescription: 'The reconcile function errored or timed out in 3 of the last 5 minutes.',
        threshold: 1,
        evaluationPeriods: 5,
        datapointsToAlarm: 3,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      action,
    );
    // The schedule runs it every minute; silence means the schedule or the function is gone.
    this.add(
      'ReconcileNotRunning',
      props.reconcile.metricInvocations({ period: Duration.minutes(5), statistic: cloudwatch.Stats.SUM }).createAlarm(this, 'ReconcileNotRunning', {
        alarmDescription: 'The reconcile function has not run for 5 minutes.',
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      }),
      action,
    );
  }

  private add(id: string, alarm: cloudwatch.Alarm, action: actions.SnsAction): void {
    alarm.addAlarmAction(action);
    alarm.addOkAction(action);
    this.alarms[id] = alarm;
  }
}
