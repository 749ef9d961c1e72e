// The container files, read by real parsers since no container engine runs in CI: the Dockerfile
// (dockerfile-ast, the parser of VS Code's Docker language server) has only instructions Docker
// knows, COPY sources that exist (or that the build stage makes), well-formed ENV settings that are
// Parley's, and a HEALTHCHECK whose command works against a local server; compose.yaml (yaml) names only files, volumes, secrets and services
// that exist, has well-formed healthchecks, and takes PostgreSQL's password in one place.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, posix, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { DockerfileParser, type Dockerfile } from 'dockerfile-ast';
import ts from 'typescript';
import { parseDocument } from 'yaml';
import { settings } from '../src/config/env.ts';

const ROOT = resolve(import.meta.dirname, '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** Dockerfile reference: every instruction (MAINTAINER is deprecated, so not here). */
const INSTRUCTIONS = new Set(['FROM', 'RUN', 'CMD', 'LABEL', 'EXPOSE', 'ENV', 'ADD', 'COPY', 'ENTRYPOINT', 'VOLUME', 'USER', 'WORKDIR', 'ARG', 'ONBUILD', 'STOPSIGNAL', 'HEALTHCHECK', 'SHELL']);
/** Compose durations: a sequence of number-unit pairs (compose spec, "Specifying durations"). */
const DURATION = /^(\d+(\.\d+)?(us|ms|s|m|h))+$/;

/** The JSON array of an exec-form instruction's arguments (CMD, ENTRYPOINT, VOLUME…), or undefined in shell form. */
function execForm(raw: string | null): string[] | undefined {
  try {
    const parsed: unknown = JSON.parse(raw ?? '');
    return Array.isArray(parsed) && parsed.every((p) => typeof p === 'string') ? parsed : undefined;
  } catch {
    return undefined;
  }
}

describe('Dockerfile', () => {
  const dockerfile: Dockerfile = DockerfileParser.parse(read('Dockerfile'));
  const instructions = dockerfile.getInstructions();
  const stages = dockerfile.getFROMs();

  test('every instruction is one Docker knows (a setting continued without its ENV is not)', () => {
    for (const i of instructions) assert.ok(INSTRUCTIONS.has(i.getKeyword()), `line ${i.getRange().start.line + 1}: unknown instruction ${i.getKeyword()}`);
    assert.equal(instructions[0]?.getKeyword(), 'FROM');
  });

  test('every stage runs on the same current Node LTS (20 reached its end of life on 2026-04-30)', () => {
    const names = new Set(stages.map((f) => f.getBuildStage()).filter(Boolean));
    // A stage may start from an earlier one (the install stage from the build stage's compilers).
    const images = stages.map((f) => f.getImage()).filter((image) => !names.has(image));
    assert.ok(images.length >= 2, images.join(', '));
    assert.equal(new Set(images).size, 1, images.join(', '));
    const major = Number(/^node:(\d+)-/.exec(images[0]!)?.[1]);
    assert.ok(major >= 24 && major % 2 === 0, `${images[0]}: an even-numbered (LTS) Node, 24 or later`);
  });

  test('the image is the release tarball installed with npm ci --omit=dev, as the production-install test installs it', () => {
    const runsOf = (stage: string) => {
      const start = stages.findIndex((f) => f.getBuildStage() === stage);
      assert.ok(start >= 0, `no ${stage} stage`);
      const from = stages[start]!.getRange().start.line;
      const to = stages[start + 1]?.getRange().start.line ?? Infinity;
      return instructions.filter((i) => i.getKeyword() === 'RUN' && i.getRange().start.line > from && i.getRange().start.line < to).map((i) => i.getArgumentsContent() ?? '').join('\n');
    };
    const tarball = /scripts\/build-release\.sh (\S+\.tgz)/.exec(runsOf('build'))?.[1];
    assert.ok(tarball, 'the build stage runs scripts/build-release.sh into a tarball');
    const install = runsOf('install');
    assert.ok(install.includes(`tar -xzf ${tarball}`), install);
    assert.match(install, /npm ci --omit=dev/);
    const copies = dockerfile.getCOPYs().filter((c) => c.getFromFlag()?.getValue() === 'install');
    assert.deepEqual(copies.map((c) => c.getArguments().map((a) => a.getValue())), [['/app', './']]);
  });

  test('every COPY source exists in the repository, or comes from a stage of this file', () => {
    const stageNames = stages.map((f) => f.getBuildStage());
    const copies = dockerfile.getCOPYs();
    assert.ok(copies.length > 0);
    for (const copy of copies) {
      const from = copy.getFromFlag()?.getValue();
      const sources = copy.getArguments().slice(0, -1).map((a) => a.getValue());
      assert.ok(sources.length > 0, `line ${copy.getRange().start.line + 1}: COPY without a source`);
      if (from === undefined) for (const source of sources) assert.ok(existsSync(join(ROOT, source)), `COPY ${source}: not in the repository`);
      else assert.ok(stageNames.includes(from), `COPY --from=${from}: no such stage`);
    }
    // What scripts/build-release.sh packs is in the repository, or made by its build (dist/).
    const packed = /^files=\(([^)]*)\)/m.exec(read('scripts/build-release.sh'))?.[1]?.split(/\s+/).filter(Boolean) ?? [];
    assert.ok(packed.includes('dist') && packed.includes('package-lock.json'), packed.join(' '));
    for (const path of packed.filter((p) => p !== 'dist')) assert.ok(existsSync(join(ROOT, path)), `build-release.sh packs ${path}: not in the repository`);
    // tsconfig files are JSON with comments: TypeScript's own reader.
    assert.equal(ts.readConfigFile(join(ROOT, 'tsconfig.build.json'), ts.sys.readFile).config.compilerOptions.outDir.replace(/^\.\//, ''), 'dist');
  });

  test('every ENV is NAME=value, and names a Parley setting', () => {
    const envs = dockerfile.getENVs();
    assert.ok(envs.length > 0);
    for (const env of envs) {
      for (const property of env.getProperties()) {
        const name = property.getName();
        assert.match(name, /^[A-Za-z_][A-Za-z0-9_]*$/);
        assert.equal(property.getAssignmentOperator(), '=', `ENV ${name}: NAME=value (the form without = is deprecated)`);
        assert.ok(property.getValue(), `ENV ${name}: no value`);
        assert.ok(name in settings, `ENV ${name}: not a Parley setting`);
      }
    }
  });

  test('the final stage runs as the unprivileged user, under tini, with a HEALTHCHECK through node on /healthz', () => {
    const final = instructions.filter((i) => i.getRange().start.line > stages.at(-1)!.getRange().start.line);
    const user = final.filter((i) => i.getKeyword() === 'USER').at(-1);
    assert.equal(user?.getArguments()[0]?.getValue(), 'parley');
    assert.deepEqual(execForm(dockerfile.getENTRYPOINTs()[0]!.getRawArgumentsContent()), ['/usr/bin/tini', '--']);
    assert.deepEqual(execForm(dockerfile.getCMDs().at(-1)!.getRawArgumentsContent()), ['node', 'dist/cli/main.js', 'serve']);
    assert.ok(existsSync(join(ROOT, 'src/cli/main.ts')));
    const healthchecks = dockerfile.getHEALTHCHECKs();
    assert.equal(healthchecks.length, 1);
    const check = healthchecks[0]!;
    for (const flag of check.getFlags()) {
      assert.ok(['interval', 'timeout', 'start-period', 'start-interval', 'retries'].includes(flag.getName()), `HEALTHCHECK --${flag.getName()}`);
      assert.match(flag.getValue() ?? '', flag.getName() === 'retries' ? /^\d+$/ : DURATION);
    }
    const raw = check.getRawArgumentsContent() ?? '';
    assert.match(raw, /^CMD\s/, 'HEALTHCHECK CMD');
    const command = execForm(raw.replace(/^CMD\s+/, ''));
    assert.equal(command?.[0], 'node', 'the slim image has node, not curl');
    assert.match(command!.join(' '), /\/healthz/);
  });

  test("the HEALTHCHECK's command exits 0 while /healthz answers 200 at PORT, and 1 once nothing listens", async () => {
    const command = execForm(dockerfile.getHEALTHCHECKs()[0]!.getRawArgumentsContent()!.replace(/^CMD\s+/, ''))!;
    const server = createServer((req, res) => res.writeHead(req.url === '/healthz' ? 200 : 404).end('{}'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const env = { ...process.env, PORT: String((server.address() as AddressInfo).port) };
    const exitCode = () => new Promise<number>((r) => execFile(command[0]!, command.slice(1), { env }, (err) => r(err ? Number(err.code) : 0)));
    try {
      assert.equal(await exitCode(), 0);
    } finally {
      await new Promise((r) => server.close(r));
    }
    assert.equal(await exitCode(), 1);
  });

  test('state and recordings are volumes the final stage makes and gives to its user', () => {
    const volumes = instructions.filter((i) => i.getKeyword() === 'VOLUME').flatMap((i) => execForm(i.getRawArgumentsContent()) ?? i.getArguments().map((a) => a.getValue()));
    const env = Object.fromEntries(dockerfile.getENVs().flatMap((e) => e.getProperties()).map((p) => [p.getName(), p.getValue()]));
    assert.deepEqual(volumes.sort(), [env.DATA_DIR, env.RECORDING_DIR].sort());
    const run = instructions.filter((i) => i.getKeyword() === 'RUN').map((i) => i.getArgumentsContent() ?? '').join('\n');
    for (const dir of volumes) assert.match(run, new RegExp(`chown parley:parley[^\\n]*${dir}`), `${dir} owned by parley`);
  });
});

describe('compose.yaml', () => {
  const document = parseDocument(read('compose.yaml'), { uniqueKeys: true });
  const compose = document.toJS() as {
    services: Record<string, Record<string, unknown>>;
    volumes?: Record<string, unknown>;
    secrets?: Record<string, { file?: string }>;
  };
  const services = Object.entries(compose.services);

  test('parses as YAML with only the compose specification top-level elements', () => {
    assert.deepEqual(document.errors, []);
    for (const key of Object.keys(compose)) assert.ok(['name', 'services', 'networks', 'volumes', 'secrets', 'configs', 'include'].includes(key), key);
    for (const [name, service] of services) assert.ok(service.image || service.build, `${name}: image or build`);
  });

  test('every env_file exists, or its .example that docs/deploying/production.md has copied', () => {
    for (const [name, service] of services) {
      const files = service.env_file === undefined ? [] : [service.env_file].flat() as string[];
      for (const file of files) assert.ok(existsSync(join(ROOT, file)) || existsSync(join(ROOT, `${file}.example`)), `${name}: env_file ${file}`);
    }
  });

  test('every volume is a declared named volume or a path in the repository; every secret is declared with its file', () => {
    const declared = Object.keys(compose.volumes ?? {});
    for (const [name, service] of services) {
      for (const volume of (service.volumes ?? []) as string[]) {
        const source = volume.split(':')[0]!;
        if (source.startsWith('.') || source.startsWith('/')) assert.ok(existsSync(join(ROOT, source)), `${name}: ${source}`);
        else assert.ok(declared.includes(source), `${name}: volume ${source} is not declared`);
      }
      for (const secret of (service.secrets ?? []) as string[]) assert.ok(compose.secrets?.[secret]?.file, `${name}: secret ${secret} is not declared with a file`);
    }
  });

  test('depends_on names services, and service_healthy ones have a healthcheck', () => {
    for (const [name, service] of services) {
      const deps = service.depends_on;
      const conditions: [string, string][] = Array.isArray(deps)
        ? deps.map((d: string) => [d, 'service_started'])
        : Object.entries((deps ?? {}) as Record<string, { condition?: string }>).map(([d, c]) => [d, c.condition ?? 'service_started']);
      for (const [dep, condition] of conditions) {
        assert.ok(compose.services[dep], `${name} depends on ${dep}: no such service`);
        assert.ok(['service_started', 'service_healthy', 'service_completed_successfully'].includes(condition), condition);
        if (condition === 'service_healthy') assert.ok(compose.services[dep]!.healthcheck, `${name} waits for ${dep} to be healthy: it has no healthcheck`);
      }
    }
  });

  test('every healthcheck is well-formed; Parley has one', () => {
    assert.ok(compose.services.parley?.healthcheck);
    for (const [name, service] of services) {
      const check = service.healthcheck as Record<string, unknown> | undefined;
      if (!check) continue;
      for (const key of Object.keys(check)) assert.ok(['test', 'interval', 'timeout', 'start_period', 'start_interval', 'retries', 'disable'].includes(key), `${name}: healthcheck.${key}`);
      const testCommand = check.test;
      assert.ok(
        typeof testCommand === 'string' || (Array.isArray(testCommand) && ['CMD', 'CMD-SHELL', 'NONE'].includes(testCommand[0])),
        `${name}: healthcheck.test is a string or begins with CMD, CMD-SHELL or NONE`,
      );
      for (const key of ['interval', 'timeout', 'start_period', 'start_interval']) if (key in check) assert.match(String(check[key]), DURATION, `${name}: ${key}`);
      if ('retries' in check) assert.ok(Number.isInteger(check.retries), `${name}: retries`);
    }
  });

  test("PostgreSQL's password is one compose variable, required, and builds DATABASE_URL", () => {
    const required = '${POSTGRES_PASSWORD:?';
    const postgres = compose.services.postgres!.environment as Record<string, string>;
    const parley = compose.services.parley!.environment as Record<string, string>;
    assert.ok(postgres.POSTGRES_PASSWORD?.startsWith(required));
    assert.match(parley.DATABASE_URL ?? '', /^postgres:\/\/parley:\$\{POSTGRES_PASSWORD:\?[^}]*\}@127\.0\.0\.1:5432\/parley$/);
    assert.ok(!compose.secrets, 'no second copy in a secrets file');
    assert.doesNotMatch(read('deploy/parley.env.example'), /^DATABASE_URL=/m, 'nor in the env file compose reads');
  });

  test("Parley's environment names Parley settings only", () => {
    for (const name of Object.keys(compose.services.parley!.environment as object)) assert.ok(name in settings, name);
  });
});
