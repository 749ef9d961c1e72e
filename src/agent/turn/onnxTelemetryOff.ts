// Imported before onnxruntime-node (ES modules run their imports in order): its official builds
// since 1.29 send usage events to Microsoft (1DS, from a thread that starts with a DNS lookup)
// unless ORT_DISABLE_TELEMETRY=1 is in the environment when it initialises. A self-hosted server
// does not phone home; an operator who wants it sets ORT_DISABLE_TELEMETRY=0.
process.env.ORT_DISABLE_TELEMETRY ??= '1';
