// Settings of one area. Call recordings. src/config/env.ts merges the areas into the one validated table.
import { int, oneOf, type Setting, str } from '../parsers.js';

export const recordingsSettings = {
  RECORDING: {
    doc: "Record calls: on records every call, off none; an API key's own choice (parley keys recording <id> on|off|default) wins over it. Recordings are stereo Ogg Opus files, the caller on the left and the agent on the right.",
    default: 'off',
    parse: oneOf('off', 'on'),
  },
  RECORDING_DIR: { doc: 'Directory of the recordings (one <conversation id>.opus file a call). Unset: <DATA_DIR>/recordings. Nodes serve the recordings they find here: share it between nodes for any node to serve any.', parse: str },
  RECORDING_RETENTION_DAYS: {
    doc: 'Recordings older than this many days are deleted (checked at start and hourly); 0 keeps them for ever. 30 by default: a recording holds what callers said, kept no longer than needed (and a node records ≈ 22 MB per call-hour).',
    default: '30',
    parse: int(0, 36_500),
  },
  RECORDING_MAX_BYTES: {
    doc: "Size one call's recording may reach (its file, headers included); there the recording stops, closed as a valid Ogg Opus file, the call goes on, and its client is told (parley.recording.stopped, reason max_size). ≈ 22 MB per call-hour: the default holds about 90 minutes.",
    default: String(32 * 1024 * 1024),
    parse: int(4096, Number.MAX_SAFE_INTEGER),
  },
  RECORDING_MIN_FREE_BYTES: {
    doc: "Free space RECORDING_DIR's disk must keep: below it (checked every 5 s while calls are recorded, and as each recording starts) recordings stop, closed as valid files, their calls go on, and their clients are told (parley.recording.stopped, reason low_disk). 0: no guard (a full disk still stops a recording, as a write failure).",
    default: String(1024 * 1024 * 1024),
    parse: int(0, Number.MAX_SAFE_INTEGER),
  },
} satisfies Record<string, Setting<unknown>>;
