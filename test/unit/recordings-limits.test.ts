// Recordings and the disk: a recording starting while its disk is below RECORDING_MIN_FREE_BYTES
// stops at once (the call is told low_disk, the outcome is truncated, the file is closed); with
// room, or with the guard off, it goes on.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { Recordings } from '../../src/recordings/recordings.ts';
import type { RecordingStopReason } from '../../src/session/events.ts';
import { until } from '../helpers/wait.ts';

const log = pino({ level: 'silent' });
const GiB = 1024 ** 3;

function recordingsWith(dir: string, minFreeBytes: number, free: number): Recordings {
  return new Recordings({ byDefault: true, dir, retentionDays: 0, maxBytes: 32 * 1024 ** 2, minFreeBytes }, async () => null, log, async () => free);
}

test('below the minimum free space a recording stops: told low_disk, truncated, its file closed with an end-of-stream page', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-low-disk-'));
  try {
    const told: RecordingStopReason[] = [];
    const recordings = recordingsWith(dir, GiB, GiB / 2);
    const recorder = recordings.recorder('conv_lowdisk', (reason) => told.push(reason));
    recorder.start();
    await until('the recording stopped', () => told.length, (n) => n > 0, 5000);
    assert.deepEqual(told, ['low_disk']);
    assert.equal(await recorder.finish(), 'truncated');
    recordings.stop();
    const file = readFileSync(join(dir, 'conv_lowdisk.opus'));
    assert.equal(file.subarray(0, 4).toString('latin1'), 'OggS');
    // The last page carries the end-of-stream flag (RFC 3533 §6).
    const last = file.lastIndexOf('OggS');
    assert.equal(file[last + 5]! & 0x04, 0x04);
    assert.deepEqual(told, ['low_disk'], 'told once');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('with room, or with the guard off (0), the recording goes on', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-disk-room-'));
  try {
    for (const [minFree, free] of [[GiB, 2 * GiB], [0, 0]] as const) {
      const told: RecordingStopReason[] = [];
      const recordings = recordingsWith(dir, minFree, free);
      const recorder = recordings.recorder(`conv_room${minFree}`, (reason) => told.push(reason));
      recorder.start();
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(await recorder.finish(), 'complete');
      recordings.stop();
      assert.deepEqual(told, []);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
