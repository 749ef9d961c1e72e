// The Kubernetes manifests (deploy/kubernetes/), proven without a cluster (none can run here):
// - `kubectl kustomize` renders every overlay;
// - every rendered object is valid against the Kubernetes API: kubernetes-models' JSON schemas, and
//   its TypeScript types for what the schemas let through (a misspelt field, which a cluster's strict
//   field validation refuses);
// - Parley's container runs the image's own command, its ports and probes are the server's (asked of
//   a running node), and every setting the manifests give it (the ConfigMap, the downward API, the
//   Secret's keys as docs/deploying/kubernetes.md creates them) is in the configuration table and
//   loads with Parley's own loader; coturn's init container likewise, and `parley turn config`
//   writes coturn's listening port from it;
// - the media Service publishes exactly ICE_PORT_RANGE and STUN_PORT, the grace period covers the
//   drain, selectors match, an autoscaled Deployment names no replicas;
// - the preStop command waits while a node has calls and ends when it has none.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { DockerfileParser } from 'dockerfile-ast';
import ts from 'typescript';
import { parseAllDocuments } from 'yaml';
import { loadConfig, settings } from '../src/config/env.ts';
import { PARLEY, startServer, type RunningServer } from './helpers/server.ts';
import { parse as parseMarkdown } from './helpers/markdown.ts';
import { until } from './helpers/wait.ts';

const ROOT = resolve(import.meta.dirname, '..');
const KUBERNETES = join(ROOT, 'deploy/kubernetes');
const GUIDE = 'docs/deploying/kubernetes.md';
const run = promisify(execFile);

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  // Rendered manifests: read as the API defines them, checked below.
  [field: string]: any;
}

const OVERLAYS = readdirSync(join(KUBERNETES, 'overlays')).sort();

/** kubectl kustomize's output for an overlay, as objects. */
async function render(overlay: string): Promise<K8sObject[]> {
  const { stdout } = await run('kubectl', ['kustomize', join(KUBERNETES, 'overlays', overlay)], { maxBuffer: 16 * 1024 * 1024 });
  const docs = parseAllDocuments(stdout);
  for (const d of docs) assert.deepEqual(d.errors, [], `${overlay}: ${d.errors.join('; ')}`);
  return docs.map((d) => d.toJS() as K8sObject);
}

const rendered = new Map<string, K8sObject[]>();
const find = (objects: K8sObject[], kind: string, name: string) => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  assert.ok(found, `no ${kind} ${name}`);
  return found;
};
/** A ConfigMap by its generator's name (kustomize appends a hash of its contents). */
const configMap = (objects: K8sObject[], name: string) => {
  const found = objects.filter((o) => o.kind === 'ConfigMap' && new RegExp(`^${name}(-[a-z0-9]{10})?$`).test(o.metadata.name));
  assert.equal(found.length, 1, `ConfigMaps named ${name}: ${found.map((o) => o.metadata.name).join(', ')}`);
  return found[0]!;
};
const parleyPod = (objects: K8sObject[]) => find(objects, 'Deployment', 'parley').spec.template.spec;
const parleyContainer = (objects: K8sObject[]) => parleyPod(objects).containers.find((c: { name: string }) => c.name === 'parley');

/** The Secrets the guide's `kubectl create secret` commands make, each command run as written with kubectl as a client-side dry run. */
async function guideSecrets(): Promise<K8sObject[][]> {
  const blocks = parseMarkdown(readFileSync(join(ROOT, GUIDE), 'utf8')).blocks.filter((b) => b.lang === 'sh' && b.body.includes('kubectl create secret'));
  assert.equal(blocks.length, 2, 'the one-node and the cluster commands');
  return Promise.all(
    blocks.map(async (b) => {
      const script = `set -euo pipefail\nkubectl() { command kubectl "$@" --dry-run=client -o yaml; echo ---; }\n${b.body}`;
      const { stdout } = await run('bash', ['-c', script], { env: { ...process.env, KUBECONFIG: '/dev/null' } });
      return parseAllDocuments(stdout).map((d) => d.toJS() as K8sObject).filter(Boolean);
    }),
  );
}

/** What a pod's container has in its environment: its ConfigMaps, Secret and literal values, `$(VAR)` expanded, the downward API's fields given. */
function environment(objects: K8sObject[], container: any, secret: Record<string, string>, fields: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef) Object.assign(env, objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === from.configMapRef.name)!.data);
    if (from.secretRef) Object.assign(env, secret);
  }
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = String(e.value).replace(/\$\(([A-Z_]+)\)/g, (_, name: string) => env[name] ?? `$(${name})`);
    else if (e.valueFrom?.fieldRef) env[e.name] = fields[e.valueFrom.fieldRef.fieldPath]!;
    else if (e.valueFrom?.secretKeyRef) env[e.name] = secret[e.valueFrom.secretKeyRef.key]!;
  }
  return env;
}

/** What the downward API gives a pod, for the configuration's sake. */
const FIELDS = { 'metadata.name': 'parley-5c7d9b8f6-x2k4q', 'status.podIP': '10.244.1.17', 'status.hostIP': '192.0.2.21' };
const isSetting = (name: string) => Object.hasOwn(settings, name);

before(async () => {
  assert.ok(OVERLAYS.length >= 3, OVERLAYS.join(', '));
  for (const overlay of OVERLAYS) rendered.set(overlay, await render(overlay));
});

describe('every overlay', () => {
  test('renders with kubectl kustomize into the objects it is made of', () => {
    for (const [overlay, objects] of rendered) {
      const kinds = objects.map((o) => `${o.kind}/${o.metadata.name.replace(/-[a-z0-9]{10}$/, '')}`).sort();
      for (const must of ['Deployment/parley', 'Deployment/parley-turn', 'Service/parley', 'Service/parley-turn', 'PodDisruptionBudget/parley', 'ConfigMap/parley-settings', 'ConfigMap/parley-turn-settings', 'NetworkPolicy/parley-turn-egress']) {
        assert.ok(kinds.includes(must), `${overlay}: no ${must} in ${kinds.join(' ')}`);
      }
      if (overlay.startsWith('cluster')) {
        for (const must of ['StatefulSet/parley-postgres', 'Deployment/parley-redis', 'HorizontalPodAutoscaler/parley']) assert.ok(kinds.includes(must), `${overlay}: no ${must}`);
      }
    }
  });

  test("is valid against the Kubernetes API's schemas (kubernetes-models' JSON schemas)", async () => {
    const GROUPS: Record<string, string> = { v1: 'v1', 'apps/v1': 'apps/v1', 'policy/v1': 'policy/v1', 'autoscaling/v2': 'autoscaling/v2', 'networking.k8s.io/v1': 'networking.k8s.io/v1' };
    for (const [overlay, objects] of rendered) {
      for (const o of objects) {
        const group = GROUPS[o.apiVersion];
        assert.ok(group, `${overlay}: ${o.kind} ${o.metadata.name}: no schemas for ${o.apiVersion}`);
        const models = (await import(`kubernetes-models/${group}`)) as Record<string, new (data: unknown) => { validate(): void }>;
        const Model = models[o.kind];
        assert.ok(Model, `${overlay}: no model of ${o.apiVersion} ${o.kind}`);
        assert.doesNotThrow(() => new Model(o).validate(), `${overlay}: ${o.kind} ${o.metadata.name}`);
      }
    }
  });

  test("has no field the API does not define (kubernetes-models' types, type-checked by TypeScript)", () => {
    // Each object as a typed constant: TypeScript's excess-property check finds an unknown field at any depth.
    const lines = ["import type * as core from 'kubernetes-models/v1';", "import type * as apps from 'kubernetes-models/apps/v1';", "import type * as policy from 'kubernetes-models/policy/v1';", "import type * as autoscaling from 'kubernetes-models/autoscaling/v2';", "import type * as networking from 'kubernetes-models/networking.k8s.io/v1';"];
    const NAMESPACES: Record<string, string> = { v1: 'core', 'apps/v1': 'apps', 'policy/v1': 'policy', 'autoscaling/v2': 'autoscaling', 'networking.k8s.io/v1': 'networking' };
    const where: string[] = [];
    for (const [overlay, objects] of rendered) {
      for (const o of objects) {
        where.push(`${overlay}: ${o.kind} ${o.metadata.name}`);
        lines.push(`export const o${where.length - 1}: ${NAMESPACES[o.apiVersion]}.I${o.kind} = ${JSON.stringify(o)};`);
      }
    }
    const file = join(ROOT, 'test', '.kubernetes-objects.ts');
    const options: ts.CompilerOptions = { strict: true, noEmit: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, types: [], skipLibCheck: true };
    const host = ts.createCompilerHost(options);
    const source = lines.join('\n');
    const readFile = host.readFile.bind(host);
    host.readFile = (name) => (resolve(name) === file ? source : readFile(name));
    host.fileExists = ((exists) => (name: string) => resolve(name) === file || exists(name))(host.fileExists.bind(host));
    const program = ts.createProgram([file], options, host);
    const problems = ts.getPreEmitDiagnostics(program).map((d) => {
      const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
      return `${line >= 5 ? where[line - 5] : 'imports'}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
    });
    assert.deepEqual(problems, []);
  });

  test('selectors match the pods they mean; the budget and the Services select Parley; an autoscaled Deployment names no replicas', () => {
    for (const [overlay, objects] of rendered) {
      const pods = objects.filter((o) => ['Deployment', 'StatefulSet'].includes(o.kind));
      for (const w of pods) {
        const labels = w.spec.template.metadata.labels;
        for (const [k, v] of Object.entries(w.spec.selector.matchLabels)) assert.equal(labels[k], v, `${overlay}: ${w.kind} ${w.metadata.name}'s selector`);
      }
      const matches = (selector: Record<string, string>) => pods.filter((w) => Object.entries(selector).every(([k, v]) => w.spec.template.metadata.labels[k] === v)).map((w) => w.metadata.name);
      for (const s of objects.filter((o) => o.kind === 'Service')) assert.equal(matches(s.spec.selector).length, 1, `${overlay}: Service ${s.metadata.name} selects ${matches(s.spec.selector).join(', ')}`);
      assert.deepEqual(matches(find(objects, 'PodDisruptionBudget', 'parley').spec.selector.matchLabels), ['parley']);
      assert.deepEqual(matches(find(objects, 'PodDisruptionBudget', 'parley-turn').spec.selector.matchLabels), ['parley-turn']);
      assert.deepEqual(matches(find(objects, 'NetworkPolicy', 'parley-turn-egress').spec.podSelector.matchLabels), ['parley-turn']);
      for (const hpa of objects.filter((o) => o.kind === 'HorizontalPodAutoscaler')) {
        const target = find(objects, hpa.spec.scaleTargetRef.kind, hpa.spec.scaleTargetRef.name);
        assert.equal(target.spec.replicas, undefined, `${overlay}: a later apply would reset what the autoscaler chose`);
        assert.deepEqual(hpa.spec.metrics.map((m: any) => m.pods?.metric.name), ['parley_node_load']);
      }
    }
  });
});

describe("Parley's container", () => {
  test("runs the image's own entrypoint and command (the Dockerfile's)", () => {
    const dockerfile = DockerfileParser.parse(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
    const entrypoint = JSON.parse(dockerfile.getENTRYPOINTs().at(-1)!.getRawArgumentsContent()!);
    const cmd = JSON.parse(dockerfile.getCMDs().at(-1)!.getRawArgumentsContent()!);
    for (const [overlay, objects] of rendered) {
      const c = parleyContainer(objects);
      assert.deepEqual([c.command, c.args], [entrypoint, cmd], overlay);
    }
  });

  test('every setting it is given is in the configuration table, and together they load', async () => {
    const [oneNode, cluster] = await guideSecrets();
    const secretOf = (secrets: K8sObject[], name: string) =>
      Object.fromEntries(Object.entries(find(secrets, 'Secret', name).data as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
    for (const [overlay, objects] of rendered) {
      const secret = secretOf(overlay.startsWith('cluster') ? cluster! : oneNode!, 'parley-secrets');
      const c = parleyContainer(objects);
      const named = [...(c.env ?? []).map((e: { name: string }) => e.name), ...Object.keys(secret)];
      for (const from of c.envFrom) if (from.configMapRef) named.push(...Object.keys(find(objects, 'ConfigMap', from.configMapRef.name).data));
      assert.deepEqual(named.filter((n) => !isSetting(n)), [], `${overlay}: not Parley settings`);
      const env = environment(objects, c, secret, FIELDS);
      const config = loadConfig(env);
      // Each pod its own: its name, its address for the other nodes, its Kubernetes node's for media.
      assert.equal(config.NODE_ID, FIELDS['metadata.name']);
      assert.equal(config.INTERNAL_HOST, FIELDS['status.podIP']);
      assert.equal(config.ICE_PUBLIC_IP, FIELDS['status.hostIP']);
      assert.deepEqual(config.TURN_URLS, [`turn:${FIELDS['status.hostIP']}:30478?transport=udp`, `turn:${FIELDS['status.hostIP']}:30478?transport=tcp`]);
      assert.ok(config.API_KEY_PEPPER && config.TURN_SECRETS?.length && config.ADMIN_TOKEN, `${overlay}: the secrets`);
      assert.equal(config.CREATE_DEV_KEY, false, 'no API key printed into a log');
      if (overlay.startsWith('cluster')) {
        // The URLs name the store Services the overlay runs, and their passwords are the stores' own.
        const stores = secretOf(cluster!, 'parley-store-secrets');
        const db = new URL(config.DATABASE_URL);
        const redis = new URL(config.REDIS_URL!);
        assert.equal(db.password, stores.POSTGRES_PASSWORD);
        assert.equal(redis.password, stores.REDIS_PASSWORD);
        assert.equal(Number(find(objects, 'Service', db.hostname).spec.ports[0].port), Number(db.port));
        assert.equal(Number(find(objects, 'Service', redis.hostname).spec.ports[0].port), Number(redis.port));
        const postgres = find(objects, 'StatefulSet', 'parley-postgres').spec.template.spec.containers[0];
        assert.equal(postgres.env.find((e: { name: string }) => e.name === 'POSTGRES_USER').value, db.username);
        assert.equal(postgres.env.find((e: { name: string }) => e.name === 'POSTGRES_DB').value, db.pathname.slice(1));
      } else {
        assert.match(config.DATABASE_URL, /^sqlite:\/var\/lib\/parley\//, 'SQLite in the data directory');
        const data = parleyPod(objects).volumes.find((v: { name: string }) => v.name === 'data');
        assert.equal(find(objects, 'PersistentVolumeClaim', data.persistentVolumeClaim.claimName).spec.accessModes[0], 'ReadWriteOnce');
      }
      // Its volumes are where the settings put its files.
      const mounts = c.volumeMounts.map((m: { mountPath: string }) => m.mountPath);
      for (const dir of [config.DATA_DIR, config.RECORDING_DIR, '/tmp']) assert.ok(mounts.includes(dir), `${overlay}: ${dir} is not a volume (the root file system is read-only)`);
    }
  });

  test('its ports are the ones the settings open, and the media Service publishes exactly ICE_PORT_RANGE and STUN_PORT on the nodes', async () => {
    const [oneNode] = await guideSecrets();
    const secret = Object.fromEntries(Object.keys(find(oneNode!, 'Secret', 'parley-secrets').data).map((k) => [k, 'x'.repeat(40)]));
    for (const [overlay, objects] of rendered) {
      const pod = parleyPod(objects);
      const c = parleyContainer(objects);
      const config = loadConfig(environment(objects, c, secret, FIELDS));
      const port = (name: string) => c.ports.find((p: { name: string }) => p.name === name);
      assert.deepEqual([port('http').containerPort, port('http').protocol], [config.PORT, 'TCP'], overlay);
      assert.deepEqual([port('internal').containerPort, port('internal').protocol], [config.INTERNAL_PORT, 'TCP'], overlay);
      assert.deepEqual([port('stun').containerPort, port('stun').protocol], [config.STUN_PORT, 'UDP'], overlay);
      const [lo, hi] = config.ICE_PORT_RANGE!;
      const mediaPorts = Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
      const media = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'parley-media');
      if (pod.hostNetwork) {
        assert.equal(media, undefined, `${overlay}: on the host's network the ports are the node's`);
        assert.equal(pod.dnsPolicy, 'ClusterFirstWithHostNet', overlay);
        // Outside the NodePort range, where kube-proxy could give a Service one of them.
        for (const p of [...mediaPorts, config.STUN_PORT]) assert.ok(p < 30000 || p > 32767, `${overlay}: port ${p} is in the NodePort range`);
      } else {
        assert.ok(media, `${overlay}: no media Service`);
        assert.equal(media.spec.type, 'NodePort');
        assert.equal(media.spec.externalTrafficPolicy, 'Local', 'a node passes media to its own pod, with the client address kept');
        for (const p of media.spec.ports) assert.deepEqual([p.protocol, p.targetPort, p.nodePort], ['UDP', p.port, p.port], `${overlay}: port ${p.port}: the same number inside and out`);
        assert.deepEqual(media.spec.ports.map((p: { port: number }) => p.port).sort(), [...mediaPorts, config.STUN_PORT].sort());
      }
      // One Parley pod per Kubernetes node: the media ports are the node's.
      const anti = pod.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution;
      assert.deepEqual(anti.map((t: { topologyKey: string }) => t.topologyKey), ['kubernetes.io/hostname']);
      // coturn relays to the media ports, and no others.
      const egress = find(objects, 'NetworkPolicy', 'parley-turn-egress').spec.egress;
      assert.deepEqual(egress, [{ ports: [{ protocol: 'UDP', port: lo, endPort: hi }] }], overlay);
      // One pod at a time is replaced: no node would have the media ports for an extra one.
      assert.equal(find(objects, 'Deployment', 'parley').spec.strategy.rollingUpdate.maxSurge, 0);
    }
  });

  test('the grace period covers the preStop wait, SHUTDOWN_GRACE_MS and the 15 s a shutdown takes at most beyond it', () => {
    const serverSource = readFileSync(join(ROOT, 'src/server.ts'), 'utf8');
    const bound = Number(/setTimeout\([^]*?(\d+)_000 \+ config\.SHUTDOWN_GRACE_MS/.exec(serverSource)?.[1]);
    assert.equal(bound, 15, 'src/server.ts: the shutdown bound beyond SHUTDOWN_GRACE_MS');
    for (const [overlay, objects] of rendered) {
      const pod = parleyPod(objects);
      const c = parleyContainer(objects);
      const preStop: string[] = c.lifecycle.preStop.exec.command;
      const waitSeconds = Number(preStop.at(-1));
      const graceMs = Number(configMap(objects, 'parley-settings').data.SHUTDOWN_GRACE_MS);
      assert.ok(waitSeconds > 0 && graceMs >= 0, overlay);
      assert.ok(pod.terminationGracePeriodSeconds >= waitSeconds + graceMs / 1000 + bound, `${overlay}: ${pod.terminationGracePeriodSeconds} s`);
    }
  });

  test("coturn's init container is given settings only, from which `parley turn config` writes the port its Service targets", async () => {
    const [oneNode] = await guideSecrets();
    const secret = Object.fromEntries(Object.entries(find(oneNode!, 'Secret', 'parley-secrets').data as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
    for (const [overlay, objects] of rendered) {
      const turn = find(objects, 'Deployment', 'parley-turn').spec.template.spec;
      const init = turn.initContainers[0];
      const env = environment(objects, init, secret, FIELDS);
      assert.deepEqual(Object.keys(env).filter((n) => !isSetting(n)), [], overlay);
      assert.deepEqual(init.command.slice(0, 4), ['node', 'dist/cli/main.js', 'turn', 'config'], overlay);
      const output = init.command[init.command.indexOf('--output') + 1];
      assert.ok(turn.containers[0].args.includes(output), `${overlay}: coturn reads the file written`);
      const service = find(objects, 'Service', 'parley-turn');
      const servicePorts = service.spec.ports.map((p: { protocol: string; nodePort: number }) => `${p.protocol}/${p.nodePort}`).sort();
      assert.deepEqual(servicePorts, ['TCP/30478', 'UDP/30478'], "the port each Parley pod's TURN_URLS name");
      if (overlay !== OVERLAYS[0]) continue;
      // The real generator, with the init container's environment.
      const dataDir = mkdtempSync(join(tmpdir(), 'parley-turn-config-'));
      const { stdout } = await run(process.execPath, [...PARLEY, 'turn', 'config'], { cwd: ROOT, env: { PATH: process.env.PATH, ...env, DATA_DIR: dataDir } }).finally(() =>
        rmSync(dataDir, { recursive: true, force: true }),
      );
      const listening = Number(/^listening-port=(\d+)$/m.exec(stdout)?.[1]);
      const target = turn.containers[0].ports.find((p: { protocol: string }) => p.protocol === 'UDP');
      assert.equal(listening, target.containerPort);
      assert.match(stdout, new RegExp(`^static-auth-secret=${secret.TURN_SECRETS}$`, 'm'));
      for (const range of env.TURN_ALLOWED_PEER_IPS!.split(',')) assert.match(stdout, new RegExp(`^allowed-peer-ip=${range.replace(/\./g, '\\.')}$`, 'm'));
    }
  });
});

describe('against a running node', () => {
  let node: RunningServer;
  before(async () => {
    node = await startServer();
  });
  after(async () => {
    await node?.stop();
  });

  test('the probes ask paths the server answers: /healthz 200, /readyz 200 once ready', async () => {
    // Ready once its checks have run (TURN's first allocation, the speech engines).
    await until('/readyz 200', () => fetch(node.baseUrl + '/readyz').then((r) => r.status), (status) => status === 200, 60_000);
    for (const [overlay, objects] of rendered) {
      const c = parleyContainer(objects);
      for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
        assert.equal(c[probe].httpGet.port, 'http', `${overlay}: ${probe}`);
        const res = await fetch(node.baseUrl + c[probe].httpGet.path);
        assert.equal(res.status, 200, `${overlay}: ${probe} ${c[probe].httpGet.path}`);
      }
      assert.equal(c.readinessProbe.httpGet.path, '/readyz');
      assert.equal(c.livenessProbe.httpGet.path, '/healthz');
    }
  });

  test('preStop, run against it with no call, ends at once', async () => {
    const [command, ...args] = parleyContainer(rendered.get(OVERLAYS[0]!)!).lifecycle.preStop.exec.command;
    assert.equal(command, 'node');
    assert.equal(await runPreStop(args, new URL(node.baseUrl).port), 0);
  });
});

/** Runs preStop's command (node -e script seconds) against a /metrics on loopback `port`; resolves with its exit code. */
function runPreStop(args: string[], port: number | string): Promise<number | null> {
  return new Promise((done) => spawn(process.execPath, args, { env: { PATH: process.env.PATH, PORT: String(port) }, stdio: 'inherit' }).on('exit', done));
}

/** A node's /metrics that reports `calls(n)` live calls at its n-th scrape. */
async function fakeMetrics(calls: (n: number) => number): Promise<{ port: number; asked: () => number; close: () => void }> {
  let asked = 0;
  const server = createServer((_req, res) => {
    asked++;
    res.end(`# TYPE parley_active_calls gauge\nparley_active_calls ${calls(asked)}\n`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, asked: () => asked, close: () => server.close() };
}

test('preStop waits while the node carries calls, and ends once it carries none', async () => {
  const [, ...args] = parleyContainer(rendered.get(OVERLAYS[0]!)!).lifecycle.preStop.exec.command;
  const node = await fakeMetrics((n) => (n <= 2 ? 2 : 0));
  try {
    assert.equal(await runPreStop(args, node.port), 0);
    assert.equal(node.asked(), 3, 'asked until the calls were gone, and no more');
  } finally {
    node.close();
  }
});

test('preStop gives up after its bound while calls go on (SIGTERM then ends them)', async () => {
  const [, ...args] = parleyContainer(rendered.get(OVERLAYS[0]!)!).lifecycle.preStop.exec.command;
  const node = await fakeMetrics(() => 2);
  try {
    // Its bound is the last argument (300 s in the manifests); 1 s here.
    assert.equal(await runPreStop([...args.slice(0, -1), '1'], node.port), 0);
    assert.ok(node.asked() >= 1);
  } finally {
    node.close();
  }
});
