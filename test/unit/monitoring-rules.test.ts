// deploy/monitoring: every alert rule has its shape and an expression that parses as far as
// brackets and strings go, and every series a rule or a dashboard panel names is one Sandlot
// exports (a histogram by its _bucket, _sum and _count series). A renamed metric breaks this test,
// not the alert that would have stayed silent.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { createMetrics } from '../../lib/metrics.ts';

const monitoring = resolve(import.meta.dirname, '../../deploy/monitoring');

const ruleSchema = z.strictObject({
  alert: z.string().regex(/^Sandlot[A-Z][A-Za-z]+$/),
  expr: z.string().min(1),
  for: z.string().regex(/^\d+[smh]$/),
  labels: z.strictObject({ severity: z.enum(['page', 'warning', 'info']) }),
  annotations: z.strictObject({ summary: z.string().min(1), description: z.string().min(1) }),
});
const rulesSchema = z.strictObject({
  groups: z.array(z.strictObject({ name: z.string().min(1), rules: z.array(ruleSchema).min(1) })).min(1),
});

const dashboardSchema = z.looseObject({
  uid: z.string().min(1),
  title: z.string().min(1),
  panels: z
    .array(
      z.looseObject({
        title: z.string().min(1),
        targets: z.array(z.looseObject({ refId: z.string(), expr: z.string().min(1) })).min(1),
      }),
    )
    .min(1),
});

/** PromQL words that are not series: functions, aggregations, their modifiers, set operators. */
const NOT_SERIES = new Set([
  ...['sum', 'min', 'max', 'avg', 'count', 'stddev', 'stdvar', 'topk', 'bottomk', 'quantile', 'group'],
  ...[
    'by',
    'without',
    'on',
    'ignoring',
    'group_left',
    'group_right',
    'and',
    'or',
    'unless',
    'bool',
    'offset',
  ],
  ...['rate', 'irate', 'increase', 'delta', 'idelta', 'deriv', 'histogram_quantile', 'abs', 'clamp_min'],
  ...[
    'max_over_time',
    'min_over_time',
    'avg_over_time',
    'absent',
    'time',
    'vector',
    'scalar',
    'label_replace',
  ],
]);

/** Brackets balance outside strings, and every string closes. */
function balanced(expr: string): boolean {
  const closing: Record<string, string> = { ')': '(', '}': '{', ']': '[' };
  const stack: string[] = [];
  for (let i = 0; i < expr.length; i++) {
    const ch = expr[i] as string;
    if (ch === '"') {
      const end = expr.indexOf('"', i + 1);
      if (end < 0) return false;
      i = end;
    } else if ('({['.includes(ch)) stack.push(ch);
    else if (ch in closing && stack.pop() !== closing[ch]) return false;
  }
  return stack.length === 0;
}

/** The series names an expression selects (strings, label matchers, ranges and groupings removed). */
function seriesOf(expr: string): string[] {
  const bare = expr
    .replace(/"[^"]*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, ' ');
  const words = bare.match(/[a-zA-Z_:][\w:]*/g) ?? [];
  return [...new Set(words.filter((word) => !NOT_SERIES.has(word)))];
}

/** Every series name the registry exports, histograms by their three series. */
function exported(): Set<string> {
  const names = new Set<string>();
  for (const metric of createMetrics().registry.getMetricsAsArray()) {
    const { name, type } = metric as unknown as { name: string; type: string };
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
    else names.add(name);
  }
  return names;
}

const rules = rulesSchema.parse(parse(readFileSync(resolve(monitoring, 'sandlot-rules.yaml'), 'utf8')));
const dashboard = dashboardSchema.parse(
  JSON.parse(readFileSync(resolve(monitoring, 'sandlot-dashboard.json'), 'utf8')),
);
const alerts = rules.groups.flatMap((group) => group.rules);
const targets = dashboard.panels.flatMap((panel) => panel.targets.map((t) => ({ panel: panel.title, ...t })));

describe('deploy/monitoring', () => {
  const names = exported();

  it('names each alert once', () => {
    const seen = alerts.map((rule) => rule.alert);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(
      expect.arrayContaining([
        'SandlotProvisionSlow',
        'SandlotUnknownAttemptOld',
        'SandlotObservationStale',
        'SandlotCleanupsPiling',
        'SandlotOutboxLag',
      ]),
    );
  });

  it.each(alerts.map((rule) => [rule.alert, rule.expr] as const))(
    'alert %s parses and selects only exported series',
    (_alert, expr) => {
      expect(balanced(expr)).toBe(true);
      const series = seriesOf(expr);
      expect(series.length).toBeGreaterThan(0);
      expect(series.filter((name) => !names.has(name))).toEqual([]);
    },
  );

  it.each(targets.map((t) => [t.panel, t.refId, t.expr] as const))(
    'panel %s target %s parses and selects only exported series',
    (_panel, _ref, expr) => {
      expect(balanced(expr)).toBe(true);
      const series = seriesOf(expr);
      expect(series.length).toBeGreaterThan(0);
      expect(series.filter((name) => !names.has(name))).toEqual([]);
    },
  );

  it('the checks catch a misspelt series and an unclosed bracket', () => {
    expect(seriesOf('max(sandlot_outbox_lag_secs) > 60').filter((name) => !names.has(name))).toEqual([
      'sandlot_outbox_lag_secs',
    ]);
    expect(balanced('sum(rate(sandlot_leases[5m])')).toBe(false);
    expect(balanced('max(x{state="a)"})')).toBe(true);
  });
});
