// OpenAI-compatible stand-ins for the model backends a voice agent calls: transcription
// (`/v1/audio/transcriptions`, STT_URL), chat completions streamed over SSE (`/v1/chat/completions`,
// LLM_BASE_URL) and speech (`/v1/audio/speech`, TTS_URL), on one loopback HTTP server. What each
// answers and after how long is the caller's to say; the tests use them with no delay, the load
// generator (bench/lib/modelBackendsProcess.ts) in a process of its own with fixed latencies.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { encodeWav } from '../../src/media/audio/wav.ts';

export interface BackendRequest {
  path: string;
  auth: string | undefined;
  body: Buffer;
}

export interface ModelBackendsOptions {
  /** What the transcription service hears in any audio. */
  transcript?: string;
  /** The chat model's reply, streamed as these pieces in order. */
  replyPieces?: string[];
  /** Between two streamed pieces of the reply, ms. */
  pieceGapMs?: number;
  /** 24 kHz 16-bit mono PCM the speech service speaks for an input text. */
  speech?: (input: string) => Int16Array;
  /** Before the transcription answers, ms. */
  transcriptionMs?: number;
  /** Before the chat model's first piece, ms. */
  firstTokenMs?: number;
  /** Before the speech service's first audio, ms. */
  firstAudioMs?: number;
  /** Bytes per write of a streamed speech body (100 ms of 24 kHz PCM by default). */
  speechChunkBytes?: number;
  /** Keep every request (tests); off for long runs. */
  record?: boolean;
  /**
   * Answers a request itself instead (a failing or silent model in a test); return false to let the
   * stand-in answer as usual.
   */
  intercept?: (req: BackendRequest, res: ServerResponse) => boolean;
}

export interface ModelBackends {
  /** `http://127.0.0.1:<port>/v1`, for STT_URL, LLM_BASE_URL and TTS_URL alike. */
  baseUrl: string;
  server: Server;
  requests: BackendRequest[];
  /** Requests answered, by path. */
  counts: Map<string, number>;
  close(): Promise<void>;
}

/** Half a second of a 300 Hz tone at 24 kHz: the speech of a test that needs no words. */
export function tone24k(ms = 500, hz = 300): Int16Array {
  const out = new Int16Array(ms * 24);
  for (let i = 0; i < out.length; i++) out[i] = Math.round(8000 * Math.sin((2 * Math.PI * hz * i) / 24_000));
  return out;
}

export async function startModelBackends(opts: ModelBackendsOptions = {}): Promise<ModelBackends> {
  const transcript = opts.transcript ?? 'hello from the transcription service';
  const pieces = opts.replyPieces ?? ['Hello ', 'from the ', 'language model. ', 'Second sentence.'];
  const speech = opts.speech ?? (() => tone24k());
  const chunkBytes = opts.speechChunkBytes ?? 4800;
  const requests: BackendRequest[] = [];
  const counts = new Map<string, number>();
  const wait = (ms: number | undefined) => (ms ? sleep(ms) : undefined);

  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const request: BackendRequest = { path: req.url ?? '', auth: req.headers.authorization, body: Buffer.concat(chunks) };
    if (opts.record !== false) requests.push(request);
    counts.set(request.path, (counts.get(request.path) ?? 0) + 1);
    if (opts.intercept?.(request, res)) return;
    switch (request.path) {
      case '/v1/audio/transcriptions':
        await wait(opts.transcriptionMs);
        return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ text: transcript }));
      case '/v1/chat/completions': {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        await wait(opts.firstTokenMs);
        for (const [i, piece] of pieces.entries()) {
          if (i > 0) await wait(opts.pieceGapMs ?? 20);
          res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: piece } }] })}\n\n`);
        }
        return res.end('data: [DONE]\n\n');
      }
      case '/v1/audio/speech': {
        const body = JSON.parse(request.body.toString()) as { input?: string; response_format?: string };
        const pcm = speech(body.input ?? '');
        const bytes = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
        await wait(opts.firstAudioMs);
        // As OpenAI answers: `pcm` is raw 24 kHz 16-bit mono, streamed; otherwise a WAV file.
        if (body.response_format !== 'pcm') return res.writeHead(200, { 'content-type': 'audio/wav' }).end(encodeWav([pcm], 24_000));
        res.writeHead(200, { 'content-type': 'audio/pcm' });
        for (let at = 0; at < bytes.length; at += chunkBytes) res.write(bytes.subarray(at, at + chunkBytes));
        return res.end();
      }
      default:
        return res.writeHead(404).end();
    }
  };

  const server = createServer((req, res) => {
    answer(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    server,
    requests,
    counts,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
