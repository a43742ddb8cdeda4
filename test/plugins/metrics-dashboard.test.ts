// docs/grafana-dashboard.json: a Grafana dashboard (panels with Prometheus targets) whose every
// expression names only metrics a live GET /metrics exports, so a renamed metric breaks this test,
// not an operator's dashboard.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { register, startApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const DASHBOARD = new URL('../../docs/grafana-dashboard.json', import.meta.url);
/** Every target's: the dashboard's data source variable, chosen when it is imported. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not JavaScript's
const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };

interface Target {
  refId?: unknown;
  expr?: unknown;
  datasource?: unknown;
}
interface Panel {
  id?: unknown;
  type?: unknown;
  title?: unknown;
  gridPos?: { h?: unknown; w?: unknown; x?: unknown; y?: unknown };
  targets?: Target[];
  panels?: Panel[];
}

const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
  title?: unknown;
  uid?: unknown;
  schemaVersion?: unknown;
  panels?: Panel[];
  templating?: { list?: Array<{ name?: unknown; type?: unknown; query?: unknown; definition?: unknown }> };
};

/** Every panel, rows' nested ones included. */
const panels = (list: Panel[] = []): Panel[] => list.flatMap((p) => [p, ...panels(p.panels)]);

/** The PromQL of every target, and of the template variables that query Prometheus. */
function expressions(): string[] {
  const fromPanels = panels(dashboard.panels).flatMap((p) => (p.targets ?? []).map((t) => String(t.expr)));
  const fromVariables = (dashboard.templating?.list ?? [])
    .filter((v) => v.type === 'query')
    .map((v) => String(v.definition));
  return [...fromPanels, ...fromVariables];
}

/** The sample names in Prometheus text (histograms' _bucket, _sum and _count included). */
function exported(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    names.add(/^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)![0]);
  }
  return names;
}

test("ISSUE 32: docs/grafana-dashboard.json has a Grafana dashboard's shape: panels with Prometheus targets", () => {
  assert.equal(typeof dashboard.title, 'string');
  assert.equal(typeof dashboard.uid, 'string');
  assert.equal(typeof dashboard.schemaVersion, 'number');
  const all = panels(dashboard.panels);
  const graphs = all.filter((p) => p.type !== 'row');
  assert.ok(graphs.length >= 12, 'a dashboard, not a sketch');
  const ids = all.map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
  for (const panel of graphs) {
    const what = String(panel.title);
    assert.equal(typeof panel.title, 'string');
    assert.ok(['timeseries', 'stat', 'gauge', 'table', 'bargauge'].includes(String(panel.type)), what);
    for (const key of ['h', 'w', 'x', 'y'] as const)
      assert.equal(typeof panel.gridPos?.[key], 'number', what);
    assert.ok(
      (panel.gridPos!.x as number) + (panel.gridPos!.w as number) <= 24,
      `${what} fits the 24 columns`,
    );
    assert.ok(Array.isArray(panel.targets) && panel.targets.length > 0, `${what} has targets`);
    for (const target of panel.targets!) {
      assert.equal(typeof target.refId, 'string', what);
      assert.equal(typeof target.expr, 'string', what);
      assert.match(String(target.expr), /\busher_/, `${what} queries Usher's metrics`);
      assert.deepEqual(target.datasource, DATASOURCE, what);
    }
  }
});

describeEachStore('docs/grafana-dashboard.json against a live /metrics', (store) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(store, 'b');
  });
  after(() => t.close());

  test('ISSUE 32: every metric an expression names is one GET /metrics exports', async () => {
    // A request and a sign-in, so that the request and hash histograms have their samples.
    const user = await register(t);
    await t.post('/api/signin', { email: user.email, password: user.password });
    const res = await t.get('/metrics');
    assert.equal(res.statusCode, 200);
    const names = exported(res.body);
    const used = new Set(expressions().flatMap((expr) => expr.match(/\busher_[a-z0-9_]+/g) ?? []));
    assert.ok(used.size >= 20, `the dashboard uses ${used.size} metrics`);
    const missing = [...used].filter((name) => !names.has(name));
    assert.deepEqual(missing, [], 'named by the dashboard, exported by no one');
  });
});
