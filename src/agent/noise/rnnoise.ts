// RNNoise (Xiph's recurrent-network noise suppressor) as WebAssembly, from @jitsi/rnnoise-wasm: its
// model is compiled into the module, so nothing is fetched. The package's JavaScript glue is written
// for browsers (and its index does not load in Node), so its module is instantiated here directly:
// the two imports it needs are written below, and the minified export names are read from the glue
// shipped beside it (a different build fails here, at start, rather than mid-call).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/** Samples per frame: 10 ms at 48 kHz. */
export const RNNOISE_FRAME = 480;

export interface RnnoiseState {
  /**
   * Denoises one frame in place (480 samples at 48 kHz, on the 16-bit scale) and returns RNNoise's
   * own speech probability for it (0–1).
   */
  process(frame: Float32Array): number;
  destroy(): void;
}

interface Exports {
  memory: WebAssembly.Memory;
  ctors(): void;
  malloc(bytes: number): number;
  free(ptr: number): void;
  create(model: number): number;
  destroy(state: number): void;
  processFrame(state: number, out: number, input: number): number;
}

const PACKAGE = '@jitsi/rnnoise-wasm';

/** The export name each function the glue binds was minified to. */
function exportNames(glue: string): Record<string, string> {
  const names: Record<string, string> = {};
  for (const m of glue.matchAll(/Module\["(_\w+)"\] = Module\["asm"\]\["(\w+)"\]/g)) names[m[1]!] = m[2]!;
  return names;
}

function load(): Exports {
  const require = createRequire(import.meta.url);
  // The 0.1 model (dist/rnnoise.wasm): a third of the CPU of the 0.2 one inlined in rnnoise-sync.js.
  const wasm = readFileSync(require.resolve(`${PACKAGE}/dist/rnnoise.wasm`));
  const names = exportNames(readFileSync(require.resolve(`${PACKAGE}/dist/rnnoise.js`), 'utf8'));
  const module = new WebAssembly.Module(wasm);
  let memory: WebAssembly.Memory | undefined;
  const imports = {
    a: {
      // emscripten_resize_heap(requested bytes): grow the memory; 1 when it did.
      a: (requested: number) => {
        try {
          memory!.grow(Math.ceil(((requested >>> 0) - memory!.buffer.byteLength) / 65536));
          return 1;
        } catch {
          return 0;
        }
      },
      // emscripten_memcpy_big(dest, src, bytes)
      b: (dest: number, src: number, n: number) => void new Uint8Array(memory!.buffer).copyWithin(dest, src, src + n),
    },
  };
  const exported = new WebAssembly.Instance(module, imports).exports as Record<string, unknown>;
  memory = Object.values(exported).find((e): e is WebAssembly.Memory => e instanceof WebAssembly.Memory);
  const fn = (name: string) => {
    const f = exported[names[name] ?? ''];
    if (typeof f !== 'function') throw new Error(`${PACKAGE}: no ${name} in its WebAssembly module (a build this code does not know)`);
    return f as (...args: number[]) => number;
  };
  if (!memory) throw new Error(`${PACKAGE}: its WebAssembly module exports no memory`);
  const e: Exports = {
    memory,
    ctors: fn('___wasm_call_ctors'),
    malloc: fn('_malloc'),
    free: fn('_free'),
    create: fn('_rnnoise_create'),
    destroy: fn('_rnnoise_destroy'),
    processFrame: fn('_rnnoise_process_frame'),
  };
  e.ctors();
  return e;
}

let engine: Exports | undefined;

/**
 * One call's RNNoise state. The module is instantiated once per process (on first use, a few ms)
 * and every call's state lives in its memory.
 */
export function createRnnoiseState(): RnnoiseState {
  const e = (engine ??= load());
  const state = e.create(0);
  const buffer = e.malloc(RNNOISE_FRAME * 4);
  let destroyed = false;
  return {
    process(frame) {
      if (destroyed) throw new Error('RNNoise state used after destroy()');
      // The memory may have grown (and its buffer changed) since the last frame.
      const heap = new Float32Array(e.memory.buffer, buffer, RNNOISE_FRAME);
      heap.set(frame);
      const p = e.processFrame(state, buffer, buffer);
      frame.set(heap);
      return p;
    },
    destroy() {
      if (destroyed) return;
      destroyed = true;
      e.free(buffer);
      e.destroy(state);
    },
  };
}

/** Loads the module now (at start), so the first call that asks for suppression does not wait. */
export function preloadRnnoise(): void {
  engine ??= load();
}
