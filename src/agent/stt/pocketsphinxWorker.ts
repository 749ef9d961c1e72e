// Runs in a worker thread: CMU PocketSphinx (Debian's libpocketsphinx, called through koffi) whose
// calls block for tens of milliseconds, so they must stay off the event loop carrying the media.
// Keeps a pool of loaded decoders (loading one takes ~0.5 s), one per utterance in progress.
import { parentPort, workerData } from 'node:worker_threads';
import koffi from 'koffi';

export type WorkerRequest =
  | { op: 'start'; id: number }
  | { op: 'audio'; id: number; pcm: Int16Array }
  | { op: 'end'; id: number }
  | { op: 'abort'; id: number }
  | { op: 'shutdown' };

export type WorkerReply = { op: 'partial' | 'final'; id: number; text: string } | { op: 'error'; id: number; message: string } | { op: 'ready' };

const { modelDir } = workerData as { modelDir: string };
const sphinxbase = koffi.load('libsphinxbase.so.3');
const pocketsphinx = koffi.load('libpocketsphinx.so.3');
const psArgs = pocketsphinx.func('void* ps_args()');
const cmdLnInit = sphinxbase.func('void* cmd_ln_init(void* inout, void* defn, int strict, ...)');
const psInit = pocketsphinx.func('void* ps_init(void* config)');
const psStartUtt = pocketsphinx.func('int ps_start_utt(void* ps)');
const psProcessRaw = pocketsphinx.func('int ps_process_raw(void* ps, const int16_t* data, size_t n, int no_search, int full_utt)');
const psEndUtt = pocketsphinx.func('int ps_end_utt(void* ps)');
const psGetHyp = pocketsphinx.func('const char* ps_get_hyp(void* ps, _Out_ int32_t* score)');
const errSetLogfp = sphinxbase.func('void* err_set_logfp(void* stream)');

// PocketSphinx logs through one process-wide FILE. Its -logfn setting opens a file and fcloses the
// one before, so two workers starting decoders at once closed the same FILE twice: glibc's stdio
// then deadlocked the whole process (seen at a node's start). A null stream turns the log off
// without closing anything; every worker setting it is harmless.
errSetLogfp(null);

type Decoder = unknown;
const idle: Decoder[] = [];
const active = new Map<number, { decoder: Decoder; samples: number; lastPartialAt: number }>();

function newDecoder(): Decoder {
  const s = 'str';
  const config = cmdLnInit(null, psArgs(), 1,
    s, '-hmm', s, `${modelDir}/en-us`,
    s, '-lm', s, `${modelDir}/en-us.lm.bin`,
    s, '-dict', s, `${modelDir}/cmudict-en-us.dict`,
    s, null);
  if (!config) throw new Error('pocketsphinx configuration failed');
  const decoder = psInit(config);
  if (!decoder) throw new Error(`pocketsphinx could not load its model from ${modelDir}`);
  return decoder;
}

function hypothesis(decoder: Decoder): string {
  return (psGetHyp(decoder, [0]) as string | null) ?? '';
}

const port = parentPort!;
port.on('message', (msg: WorkerRequest) => {
  try {
    switch (msg.op) {
      case 'shutdown':
        // Leave between native calls: closing the port lets the thread end by itself.
        port.close();
        return;
      case 'start': {
        const decoder = idle.pop() ?? newDecoder();
        psStartUtt(decoder);
        active.set(msg.id, { decoder, samples: 0, lastPartialAt: 0 });
        break;
      }
      case 'audio': {
        const utt = active.get(msg.id);
        if (!utt) return;
        psProcessRaw(utt.decoder, msg.pcm, msg.pcm.length, 0, 0);
        utt.samples += msg.pcm.length;
        // A partial hypothesis about every 300 ms of speech.
        if (utt.samples - utt.lastPartialAt >= 4800) {
          utt.lastPartialAt = utt.samples;
          port.postMessage({ op: 'partial', id: msg.id, text: hypothesis(utt.decoder) } satisfies WorkerReply);
        }
        break;
      }
      case 'end':
      case 'abort': {
        const utt = active.get(msg.id);
        if (!utt) return;
        active.delete(msg.id);
        psEndUtt(utt.decoder);
        if (msg.op === 'end') port.postMessage({ op: 'final', id: msg.id, text: hypothesis(utt.decoder) } satisfies WorkerReply);
        idle.push(utt.decoder);
        break;
      }
    }
  } catch (err) {
    port.postMessage({ op: 'error', id: 'id' in msg ? msg.id : 0, message: (err as Error).message } satisfies WorkerReply);
  }
});

// Load one decoder ahead of the first caller.
try {
  idle.push(newDecoder());
  port.postMessage({ op: 'ready' } satisfies WorkerReply);
} catch (err) {
  port.postMessage({ op: 'error', id: 0, message: (err as Error).message } satisfies WorkerReply);
}
