// Kept for the current voice agent until it moves to the stages; the engine is src/agent/stt/http.ts.
export { HttpRecognizer, type HttpRecognizerOptions } from './http.js';
