// OpenTelemetry traces of a node: off unless an OTLP endpoint is configured (or
// OTEL_TRACES_EXPORTER=otlp); then the SDK's TracerProvider batches finished spans
// (BatchSpanProcessor) and its OTLP/HTTP exporter posts them to the collector, which it finds from
// the standard OTEL_EXPORTER_OTLP_* variables itself. Spans are parented explicitly (SpanParent),
// not through an async context: a call's turns, its upstream requests and a webhook delivery each
// know where they belong, and nothing costs anything while tracing is off.
import { DiagLogLevel, ROOT_CONTEXT, SpanKind, SpanStatusCode, diag, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider, type Sampler } from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { Config } from '../config/env.js';

/** Where a span's children go: the tracer, the parent's context, and whether words may go in spans. */
export interface SpanParent {
  readonly tracer: Tracer;
  readonly context: Context;
  /** OTEL_TRACE_CONTENT: the operator lets transcripts into spans. */
  readonly content: boolean;
  /** Attributes every span started under it carries too (the reply a request is for). */
  readonly attributes?: Attributes;
}

/** A log line's link to the span it is about (empty when the span is not recorded). */
export type TraceLogFields = { trace_id?: string; span_id?: string };

/** A span in progress, or nothing (tracing off): every method is safe to call either way. */
export interface TraceSpan {
  /** Its children's parent; undefined when nothing is traced. */
  readonly parent: SpanParent | undefined;
  readonly logFields: TraceLogFields;
  set(attributes: Attributes): void;
  /** It failed: error status, error.type, the message as the status's description. */
  fail(err: unknown): void;
  /** Ends it (once; later calls do nothing). */
  end(): void;
}

export const NO_SPAN: TraceSpan = { parent: undefined, logFields: {}, set() {}, fail() {}, end() {} };

/** trace_id and span_id of a recorded span, for log lines. */
export function logFieldsOf(span: Span): TraceLogFields {
  const c = span.spanContext();
  return span.isRecording() ? { trace_id: c.traceId, span_id: c.spanId } : {};
}

/** `span` as the parent of further spans. */
export function childParent(parent: SpanParent, span: Span): SpanParent {
  return { tracer: parent.tracer, context: trace.setSpan(parent.context, span), content: parent.content };
}

/** Marks `span` failed with `err`. */
export function failSpan(span: Span, err: unknown): void {
  const e = err instanceof Error ? err : new Error(String(err));
  span.setAttribute('error.type', e.name === 'Error' ? 'error' : e.name);
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
}

class LiveSpan implements TraceSpan {
  readonly parent: SpanParent;
  readonly logFields: TraceLogFields;
  private ended = false;

  constructor(
    private readonly span: Span,
    parent: SpanParent,
  ) {
    this.parent = childParent(parent, span);
    this.logFields = logFieldsOf(span);
  }

  set(attributes: Attributes): void {
    if (!this.ended) this.span.setAttributes(attributes);
  }

  fail(err: unknown): void {
    if (!this.ended) failSpan(this.span, err);
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.span.end();
  }
}

/** A span starting now under `parent`; NO_SPAN when there is no parent (tracing off). */
export function startSpan(parent: SpanParent | undefined, name: string, attributes: Attributes, kind: SpanKind = SpanKind.INTERNAL): TraceSpan {
  if (!parent) return NO_SPAN;
  const all = parent.attributes ? { ...parent.attributes, ...attributes } : attributes;
  return new LiveSpan(parent.tracer.startSpan(name, { kind, attributes: all }, parent.context), parent);
}

/** The upstream services a voice agent calls over HTTP (LLM_BASE_URL, STT_URL, TTS_URL). */
export type UpstreamKind = 'llm' | 'stt' | 'tts';

/**
 * A request to an upstream model service: a client span named `upstream.<kind>` with the address
 * and path it goes to (never the query, which may hold a key) and the model asked for.
 */
export function upstreamSpan(parent: SpanParent | undefined, kind: UpstreamKind, url: string, model: string): TraceSpan {
  if (!parent) return NO_SPAN;
  const u = new URL(url);
  return startSpan(
    parent,
    `upstream.${kind}`,
    {
      'http.request.method': 'POST',
      'server.address': u.hostname,
      'server.port': Number(u.port) || (u.protocol === 'https:' ? 443 : 80),
      'url.path': u.pathname,
      'parley.upstream.kind': kind,
      'parley.upstream.model': model,
    },
    SpanKind.CLIENT,
  );
}

/**
 * How an upstream request ended, on its span: cancelled (the reply was interrupted: not an error),
 * or failed.
 */
export function upstreamFailed(span: TraceSpan, err: unknown, signal: AbortSignal): void {
  if (signal.aborted) span.set({ 'parley.upstream.cancelled': true });
  else span.fail(err);
}

/** The OTEL_* settings that decide whether traces are exported. */
export type TracingSwitch = Pick<Config, 'OTEL_SDK_DISABLED' | 'OTEL_TRACES_EXPORTER' | 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'>;

/** Off by default; on with OTEL_TRACES_EXPORTER=otlp or an OTLP endpoint; none and OTEL_SDK_DISABLED win. */
export function tracesWanted(c: TracingSwitch): boolean {
  if (c.OTEL_SDK_DISABLED || c.OTEL_TRACES_EXPORTER === 'none') return false;
  return c.OTEL_TRACES_EXPORTER === 'otlp' || c.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined || c.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined;
}

/** OTEL_TRACES_SAMPLER as the specification names them. */
export function samplerOf(name: Config['OTEL_TRACES_SAMPLER'], ratio: number): Sampler {
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** A node's traces: where its spans begin, and their export. */
export interface Tracing {
  readonly enabled: boolean;
  /** The parent of spans that begin a trace (a call, a webhook delivery); undefined when off. */
  readonly root: SpanParent | undefined;
  /** Exports the spans still held; resolves when done, or given up after SHUTDOWN_EXPORT_MS (never rejects). */
  shutdown(): Promise<void>;
}

export const TRACING_OFF: Tracing = { enabled: false, root: undefined, shutdown: async () => {} };

/** What the SDK reports of its own trouble (a collector that does not answer), at most once a minute. */
export interface TracingLog {
  warn(fields: object, message: string): void;
}

const SDK_COMPLAINT_EVERY_MS = 60_000;
/** How long a shutdown waits for the last export: a collector that does not answer must not hold the exit. */
export const SHUTDOWN_EXPORT_MS = 5000;

/**
 * Starts tracing as the configuration says; TRACING_OFF when it is off. `provider`'s spans go to a
 * BatchSpanProcessor and the OTLP/HTTP exporter (which reads OTEL_EXPORTER_OTLP_* itself).
 */
export function startTracing(config: Config, log: TracingLog, identity: { nodeId: string; version: string }): Tracing {
  if (!tracesWanted(config)) return TRACING_OFF;
  reportSdkTrouble(log);
  const resource = resourceFromAttributes({
    [ATTR_SERVICE_NAME]: config.OTEL_SERVICE_NAME,
    [ATTR_SERVICE_VERSION]: identity.version,
    'service.instance.id': identity.nodeId,
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, read by the SDK's own detector, win.
  }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({
    resource,
    sampler: samplerOf(config.OTEL_TRACES_SAMPLER, config.OTEL_TRACES_SAMPLER_ARG),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter(),
        scheduledDelayMillis: config.OTEL_BSP_SCHEDULE_DELAY,
        maxQueueSize: config.OTEL_BSP_MAX_QUEUE_SIZE,
        maxExportBatchSize: config.OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
        exportTimeoutMillis: config.OTEL_BSP_EXPORT_TIMEOUT,
      }),
    ],
  });
  const tracer = provider.getTracer('parley', identity.version);
  return {
    enabled: true,
    root: { tracer, context: ROOT_CONTEXT, content: config.OTEL_TRACE_CONTENT },
    shutdown: async () => {
      let timer: NodeJS.Timeout | undefined;
      const givenUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_EXPORT_MS)));
      await Promise.race([provider.shutdown().catch(() => {}), givenUp]);
      clearTimeout(timer);
    },
  };
}

/** The SDK's warnings and errors (an export that failed) into the log, throttled. */
function reportSdkTrouble(log: TracingLog): void {
  let lastAt = -Infinity;
  let quiet = 0;
  const say = (message: string, args: unknown[]) => {
    const now = performance.now();
    if (now - lastAt < SDK_COMPLAINT_EVERY_MS) {
      quiet++;
      return;
    }
    lastAt = now;
    const detail = args.map((a) => (a instanceof Error ? a.message : typeof a === 'string' ? a : '')).filter(Boolean).join('; ');
    log.warn({ ...(detail ? { detail } : {}), ...(quiet ? { similar_since_last: quiet } : {}) }, `traces: ${message}`);
    quiet = 0;
  };
  diag.setLogger(
    { error: (m, ...a) => say(m, a), warn: (m, ...a) => say(m, a), info: () => {}, debug: () => {}, verbose: () => {} },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
}
