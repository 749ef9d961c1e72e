// Parley's Prometheus rules and Grafana dashboard (deploy/prometheus/, deploy/grafana/):
// - `promtool check rules`, `promtool check config` and `promtool test rules` (Debian's prometheus)
//   pass, and the unit tests see every alert fire (and stay quiet where they should);
// - every alert has a severity, a summary and a runbook line in docs/operating/monitoring.md, and
//   that table lists no other;
// - every metric the rules and the dashboard read is one a Parley node exposes (its /metrics), or
//   one the monitoring page names as not exposed yet (and then exactly those);
// - a real Prometheus, started here on loopback with these rules, scrapes two real Parley nodes;
//   node A's LOAD_THRESHOLD is set so low that its load is past it (B has none), and
//   ParleyNodeAtLoadThreshold fires for A and not for B; the dashboard's every expression is one
//   that Prometheus parses (promtool cannot check a dashboard).
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { parse, stringify } from 'yaml';
import { freePort } from './helpers/baresip.ts';
import { killWithThisProcess } from './helpers/server.ts';
import { startTwoNodes, type TwoNodes } from './helpers/twoNodes.ts';
import { until } from './helpers/wait.ts';

const ROOT = resolve(import.meta.dirname, '..');
const PROMETHEUS_DIR = join(ROOT, 'deploy/prometheus');
const RULES_FILE = join(PROMETHEUS_DIR, 'parley-rules.yml');
const MONITORING = join(ROOT, 'docs/operating/monitoring.md');
const run = promisify(execFile);

interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rules: Rule[] = (parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);
const alerts = rules.filter((r) => r.alert);
const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy/grafana/parley.json'), 'utf8')) as {
  panels: { id: number; type: string; title: string; gridPos: { x: number; w: number }; datasource?: { uid: string }; targets?: { expr: string; datasource: { uid: string } }[] }[];
  templating: { list: { name: string; type: string }[] };
};
const dashboardExprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));

/** The metric names an expression reads (Parley's, `up`, and recording rules' level:metric:operations names). */
function metricsOf(expr: string): string[] {
  const names = expr.replace(/"[^"]*"/g, '""').match(/\b[a-z_][a-z0-9_]*(:[a-z0-9_]+)+\b|\bparley_[a-z0-9_]+\b|\bup\b/g) ?? [];
  return [...new Set(names)];
}

/** A metric family's name for a series name: a histogram's _bucket, _sum and _count are its own. */
const HISTOGRAM_SERIES = /_(bucket|sum|count)$/;

describe('promtool', () => {
  test('check rules and check config: the files are valid', async () => {
    const rulesCheck = await run('promtool', ['check', 'rules', RULES_FILE]);
    assert.match(rulesCheck.stdout, new RegExp(`SUCCESS: ${rules.length} rules found`));
    await run('promtool', ['check', 'config', join(PROMETHEUS_DIR, 'prometheus.yml')]);
  });

  test('test rules: every alert fires in a unit test, and is seen quiet in one', async () => {
    const { stdout } = await run('promtool', ['test', 'rules', 'parley-rules.test.yml'], { cwd: PROMETHEUS_DIR });
    assert.match(stdout, /SUCCESS/);
    const unit = parse(readFileSync(join(PROMETHEUS_DIR, 'parley-rules.test.yml'), 'utf8')) as { tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[] };
    const checks = unit.tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const { alert } of alerts) {
      assert.ok(checks.some((c) => c.alertname === alert && c.exp_alerts.length > 0), `${alert}: no unit test sees it fire`);
      assert.ok(checks.some((c) => c.alertname === alert && c.exp_alerts.length === 0), `${alert}: no unit test sees it quiet`);
    }
    assert.deepEqual(checks.map((c) => c.alertname).filter((name) => !alerts.some((a) => a.alert === name)), [], 'tests of alerts that do not exist');
  });
});

test('every alert has a severity, a summary and its runbook line in docs/operating/monitoring.md, which lists no other', () => {
  const doc = readFileSync(MONITORING, 'utf8');
  const rows = [...doc.matchAll(/^\| `(Parley\w+)` \| (\w+) \| ([^|]+) \| ([^|]+) \|$/gm)];
  for (const a of alerts) {
    assert.ok(['critical', 'warning', 'info'].includes(a.labels?.severity ?? ''), `${a.alert}: severity`);
    assert.ok(a.annotations?.summary, `${a.alert}: summary`);
    assert.equal(a.annotations?.runbook, 'docs/operating/monitoring.md#alerts', a.alert);
    const row = rows.find((r) => r[1] === a.alert);
    assert.ok(row, `${a.alert}: no runbook line`);
    assert.equal(row[2], a.labels!.severity, `${a.alert}: the severity in the docs`);
  }
  assert.deepEqual(rows.map((r) => r[1]).sort(), alerts.map((a) => a.alert!).sort());
  assert.match(doc, /^### Alerts$/m, 'the runbook anchor');
});

test('the dashboard is Grafana JSON: unique panel ids, a 24-column grid, every query on the chosen Prometheus', () => {
  const ids = dashboard.panels.map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length);
  for (const p of dashboard.panels) assert.ok(p.gridPos.x + p.gridPos.w <= 24, p.title);
  assert.ok(dashboard.templating.list.some((v) => v.name === 'datasource' && v.type === 'datasource'));
  for (const p of dashboard.panels.filter((p) => p.type !== 'row')) {
    assert.ok(p.targets?.length, `${p.title}: no query`);
    for (const t of p.targets!) assert.equal(t.datasource.uid, '${datasource}', p.title);
  }
});

describe('against a real Prometheus scraping two Parley nodes', () => {
  let cluster: TwoNodes;
  let prometheus: ChildProcess | undefined;
  let prometheusUrl = '';
  let dir = '';
  let output = '';
  const targetOf = (baseUrl: string) => new URL(baseUrl).host;

  before(async () => {
    // A's threshold is past whatever load a running node has (0.001: a thousandth of the machine's
    // cores or of its event loop); B has none (0: off), so it must never be said to be at it.
    cluster = await startTwoNodes('parley_prometheus', { a: { LOAD_THRESHOLD: '0.001' }, b: { LOAD_THRESHOLD: '0' } });
    dir = mkdtempSync(join(tmpdir(), 'parley-prometheus-'));
    // The rules as shipped, but for their `for` durations (minutes): two seconds here, so that an
    // alert goes pending, then firing, within the test. The unit tests check the real durations.
    const shipped = parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { rules: Rule[] }[] };
    for (const g of shipped.groups) for (const r of g.rules) if (r.for) r.for = '2s';
    writeFileSync(join(dir, 'rules.yml'), stringify(shipped));
    writeFileSync(
      join(dir, 'prometheus.yml'),
      stringify({
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        rule_files: [join(dir, 'rules.yml')],
        scrape_configs: [{ job_name: 'parley', static_configs: [{ targets: [targetOf(cluster.a.baseUrl), targetOf(cluster.b.baseUrl)] }] }],
      }),
    );
    const port = await freePort();
    prometheusUrl = `http://127.0.0.1:${port}`;
    prometheus = spawn('prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    killWithThisProcess(prometheus);
    prometheus.stdout!.on('data', (d) => (output += d));
    prometheus.stderr!.on('data', (d) => (output += d));
    await until('Prometheus ready', () => fetch(`${prometheusUrl}/-/ready`).then((r) => r.status, () => 0), (status) => status === 200, 30_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${output}`);
    });
  });
  after(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const exited = new Promise((r) => prometheus!.once('exit', r));
      prometheus.kill('SIGTERM');
      await exited;
    }
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const api = async (path: string): Promise<any> => {
    const res = await fetch(prometheusUrl + path);
    const body = (await res.json()) as { status: string; data: unknown; error?: string };
    assert.equal(body.status, 'success', `${path}: ${body.error}`);
    return body.data;
  };

  test('the node past its load threshold makes ParleyNodeAtLoadThreshold fire, for it alone', async () => {
    const firing = await until(
      'ParleyNodeAtLoadThreshold firing',
      async () => ((await api('/api/v1/alerts')).alerts as { labels: Record<string, string>; state: string }[]).filter((a) => a.labels.alertname === 'ParleyNodeAtLoadThreshold'),
      (list) => list.some((a) => a.state === 'firing'),
      60_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${output}`);
    });
    assert.deepEqual(
      firing.map((a) => [a.labels.instance, a.labels.job, a.labels.severity, a.state]),
      [[targetOf(cluster.a.baseUrl), 'parley', 'warning', 'firing']],
    );
    // Both nodes were scraped all along: B is up, with its threshold off.
    const up = (await api('/api/v1/query?query=up')).result as { metric: { instance: string }; value: [number, string] }[];
    assert.deepEqual(up.map((s) => [s.metric.instance, s.value[1]]).sort(), [[targetOf(cluster.a.baseUrl), '1'], [targetOf(cluster.b.baseUrl), '1']].sort());
    const threshold = (await api(`/api/v1/query?query=${encodeURIComponent(`parley_node_load_threshold{instance="${targetOf(cluster.b.baseUrl)}"}`)}`)).result;
    assert.equal(threshold[0].value[1], '0');
  });

  test("every metric the rules and the dashboard read is one a node exposes, or one the monitoring page names as not exposed yet", async () => {
    const exposition = await (await fetch(cluster.a.baseUrl + '/metrics')).text();
    const exposed = new Set<string>(['up']);
    for (const m of exposition.matchAll(/^# TYPE (\S+) (\w+)$/gm)) {
      exposed.add(m[1]!);
      if (m[2] === 'histogram') for (const s of ['bucket', 'sum', 'count']) exposed.add(`${m[1]}_${s}`);
    }
    const recorded = new Set(rules.filter((r) => r.record).map((r) => r.record!));
    const read = new Set([...rules, ...dashboardExprs.map((expr) => ({ expr }))].flatMap((r) => metricsOf(r.expr)));
    const unknownRecorded = [...read].filter((n) => n.includes(':') && !recorded.has(n));
    assert.deepEqual(unknownRecorded, [], 'recording rules read that parley-rules.yml does not record');
    const notExposed = [...read].filter((n) => !n.includes(':') && !exposed.has(n)).map((n) => n.replace(HISTOGRAM_SERIES, '')).sort();
    // The page says which metrics the rules read before Parley exposes them; exactly those.
    const doc = readFileSync(MONITORING, 'utf8');
    const line = /<!-- metrics read before they exist[^>]*-->\n(.*)\n/.exec(doc)?.[1] ?? '';
    assert.deepEqual([...new Set(notExposed)], [...line.matchAll(/`(parley_\w+)`/g)].map((m) => m[1]).sort(), `docs/operating/monitoring.md names these as not exposed yet: ${line}`);
  });

  test("Prometheus parses every dashboard expression (promtool cannot check a dashboard)", async () => {
    for (const expr of dashboardExprs) {
      const res = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(expr.replaceAll('$instance', '.*'))}`);
      const body = (await res.json()) as { status: string; error?: string };
      assert.equal(body.status, 'success', `${expr}: ${body.error}`);
    }
  });
});
