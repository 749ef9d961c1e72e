// Settings of one area. Traces (OpenTelemetry). src/config/env.ts merges the areas into the one validated table.
import { bool, int, num, oneOf, otlpUrl, type Setting, str } from '../parsers.js';

export const observabilitySettings = {
  OTEL_TRACES_EXPORTER: {
    doc: 'OpenTelemetry traces (a span per call, per turn with a child per stage, per upstream model request and per webhook delivery), exported over OTLP/HTTP: otlp turns them on (to http://localhost:4318 unless an endpoint is set), none turns them off whatever else is set. Unset: on exactly when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set.',
    parse: (raw: string) => (raw.trim() === '' ? undefined : oneOf('otlp', 'none')(raw.trim())),
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    doc: "The OTLP/HTTP collector's base URL (e.g. http://otel-collector:4318); traces go to its v1/traces path. Setting it turns traces on. Parley's exporter sends JSON (http/json), which a collector's otlp receiver takes on its HTTP port. The other OTEL_EXPORTER_OTLP_* settings (HEADERS, TIMEOUT, COMPRESSION, CERTIFICATE…) are read by the OpenTelemetry SDK as it documents them.",
    parse: otlpUrl,
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: { doc: 'The full URL traces are posted to (taken as it is, no path added); wins over OTEL_EXPORTER_OTLP_ENDPOINT. Setting it turns traces on.', parse: otlpUrl },
  OTEL_EXPORTER_OTLP_HEADERS: { doc: "Headers sent with each export, key=value pairs separated by commas (a collector's API key: never logged).", parse: str },
  OTEL_SERVICE_NAME: { doc: "The traces' service.name.", default: 'parley', parse: str },
  OTEL_RESOURCE_ATTRIBUTES: { doc: 'More resource attributes of the traces, key=value pairs separated by commas (deployment.environment=prod,…); service.name here wins over OTEL_SERVICE_NAME. Each node adds service.instance.id (its NODE_ID).', parse: str },
  OTEL_TRACES_SAMPLER: {
    doc: 'Which traces are kept: parentbased_always_on (every call), always_on, always_off, traceidratio or parentbased_traceidratio (a share of the calls, OTEL_TRACES_SAMPLER_ARG), parentbased_always_off. A call is kept or dropped whole.',
    default: 'parentbased_always_on',
    parse: oneOf('always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'),
  },
  OTEL_TRACES_SAMPLER_ARG: { doc: 'The share of traces the ratio samplers keep, 0 to 1.', default: '1', parse: num(0, 1) },
  OTEL_BSP_SCHEDULE_DELAY: { doc: 'Milliseconds between two exports of the finished spans.', default: '5000', parse: int(10, 600_000) },
  OTEL_BSP_MAX_QUEUE_SIZE: { doc: 'Finished spans held for export at most; past it new ones are dropped (a collector away loses spans, never the calls).', default: '2048', parse: int(1, 1_000_000) },
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: { doc: 'Spans in one export at most (no more than OTEL_BSP_MAX_QUEUE_SIZE).', default: '512', parse: int(1, 1_000_000) },
  OTEL_BSP_EXPORT_TIMEOUT: { doc: 'Milliseconds one export may take before it is given up.', default: '30000', parse: int(100, 600_000) },
  OTEL_SDK_DISABLED: { doc: 'true: no traces, whatever the other OTEL_* settings say.', default: 'false', parse: bool },
  OTEL_TRACE_CONTENT: {
    doc: "Parley's own: true puts what the caller said (the turn's transcript) on its turn span. Off, spans carry timings, ids and outcomes, never words; audio is never put in a span.",
    default: 'false',
    parse: bool,
  },
} satisfies Record<string, Setting<unknown>>;
