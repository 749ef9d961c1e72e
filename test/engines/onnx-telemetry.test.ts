// onnxruntime-node's official builds send usage events to Microsoft unless ORT_DISABLE_TELEMETRY=1
// is set before it initialises (a DNS lookup of mobile.events.data.microsoft.com a minute into a
// node's life, seen with strace): loading the Silero VAD sets it first, unless the operator chose.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SILERO = resolve(import.meta.dirname, '../../src/agent/turn/silero.ts');

async function telemetrySettingAfterLoad(env: Record<string, string>): Promise<string> {
  const script = `await import(${JSON.stringify(SILERO)}); console.log(process.env.ORT_DISABLE_TELEMETRY);`;
  const base = { ...process.env };
  delete base.ORT_DISABLE_TELEMETRY;
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env: { ...base, ...env } });
  return stdout.trim();
}

test('loading the VAD turns onnxruntime telemetry off; an explicit setting is kept', async () => {
  assert.equal(await telemetrySettingAfterLoad({}), '1');
  assert.equal(await telemetrySettingAfterLoad({ ORT_DISABLE_TELEMETRY: '0' }), '0');
});
