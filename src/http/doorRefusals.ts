// How the HTTP doors (both forms of the calls routes, OpenAI's WebSocket before its upgrade, outbound
// phone calls) answer a call that was not opened (src/calls/door.ts): one table of statuses and
// codes, written in the route's error shape — Shape A on Orga's routes, OpenAI's error object on
// OpenAI's. A refusal another node took (`placed`) is not answered here: the door hands on that
// node's answer. A server that cannot take the call says `server_error`; a client's own fault or
// limit, `invalid_request_error` (OpenAI's clients read a rate limit's type as `requests`).
import { RETRY_AFTER_SECONDS } from '../calls/admission.js';
import type { Refusal, RefusalKind } from '../calls/door.js';
import type { Metrics } from '../observability/metrics.js';
import { ERROR_TYPE, HttpError, openAiError, type ShapeABody } from './errors.js';
import { rateLimited } from './rateLimits.js';

interface HttpRefusal {
  status: number;
  code: string;
  /** Answered with Retry-After: the call may be taken shortly (here or by another node). */
  retry: boolean;
  /** The request's field the refusal is about (OpenAI's `param`). */
  param?: string;
}

export const HTTP_REFUSALS: Record<RefusalKind, HttpRefusal> = {
  limited: { status: 429, code: 'rate_limit_exceeded', retry: true },
  full: { status: 503, code: 'server_busy', retry: true },
  loaded: { status: 503, code: 'server_busy', retry: true },
  draining: { status: 503, code: 'shutting_down', retry: true },
  rejected: { status: 400, code: 'invalid_offer', retry: false, param: 'sdp' },
  model_not_allowed: { status: 403, code: 'model_not_allowed', retry: false, param: 'model' },
  model_unavailable: { status: 503, code: 'model_unavailable', retry: true, param: 'model' },
};

export type ErrorForm = 'orga' | 'openai';

/** The error a door's route throws for a refusal no other node took, in `form`'s shape; a caller's own limit is counted. */
export function httpRefusal(form: ErrorForm, refusal: Refusal<unknown>, metrics: Metrics): HttpError {
  const { status, code, retry, param } = HTTP_REFUSALS[refusal.kind];
  if (refusal.kind === 'limited') {
    metrics.rateLimited.inc({ limit: refusal.limit });
    return rateLimited(form, refusal.message, RETRY_AFTER_SECONDS);
  }
  const headers: Record<string, string> = retry ? { 'Retry-After': String(RETRY_AFTER_SECONDS) } : {};
  if (form === 'openai') return openAiError(status, code, refusal.message, param ?? null, headers);
  const body = { error: { message: refusal.message, type: status >= 500 ? 'server_error' : ERROR_TYPE, param: null, code } } satisfies ShapeABody;
  return new HttpError(status, body, headers);
}
