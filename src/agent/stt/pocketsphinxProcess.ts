// Runs in a child process of the node (pocketsphinx.ts forks it): CMU PocketSphinx (Debian's
// libpocketsphinx, called through koffi) whose calls block for tens of milliseconds, so they must stay
// off the event loop carrying the media. A process rather than a worker thread: stopping a thread
// inside a native call (loading the model, decoding) aborted the whole node (`napi_throw`), while a
// process can be killed at any moment, and its crash is its own. Keeps a pool of loaded decoders
// (loading one takes ~0.5 s), one per utterance in progress.
import koffi from 'koffi';

export type WorkerRequest =
  | { op: 'start'; id: number }
  | { op: 'audio'; id: number; pcm: Int16Array }
  | { op: 'end'; id: number }
  | { op: 'abort'; id: number };

export type WorkerReply = { op: 'partial' | 'final'; id: number; text: string } | { op: 'error'; id: number; message: string } | { op: 'ready' };

/** Where the model is: the parent's first argument to this process. */
const modelDir = process.argv[2]!;
// The node is gone (exited, killed, crashed): so is this process, at once.
process.on('disconnect', () => process.exit(0));
const send = (reply: WorkerReply) => {
  if (process.connected) process.send!(reply);
};
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

// PocketSphinx logs every decoder's configuration to stderr (the node's): a null stream turns its log
// off without closing any FILE (its -logfn setting fcloses the one before, which once deadlocked
// glibc's stdio when two decoders started at once).
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

process.on('message', (msg: WorkerRequest) => {
  try {
    switch (msg.op) {
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
          send({ op: 'partial', id: msg.id, text: hypothesis(utt.decoder) } satisfies WorkerReply);
        }
        break;
      }
      case 'end':
      case 'abort': {
        const utt = active.get(msg.id);
        if (!utt) return;
        active.delete(msg.id);
        psEndUtt(utt.decoder);
        if (msg.op === 'end') send({ op: 'final', id: msg.id, text: hypothesis(utt.decoder) } satisfies WorkerReply);
        idle.push(utt.decoder);
        break;
      }
    }
  } catch (err) {
    send({ op: 'error', id: 'id' in msg ? msg.id : 0, message: (err as Error).message } satisfies WorkerReply);
  }
});

// Load one decoder ahead of the first caller.
try {
  idle.push(newDecoder());
  send({ op: 'ready' } satisfies WorkerReply);
} catch (err) {
  send({ op: 'error', id: 0, message: (err as Error).message } satisfies WorkerReply);
}
