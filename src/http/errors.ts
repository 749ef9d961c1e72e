// The contract's two error shapes. Shape A wraps 4xx auth/limit errors; Shape B is pydantic v2's
// validation error list, which FastAPI-era clients parse.
import { Type, type Static } from '@sinclair/typebox';
import { ValidationDetail, type ValidationDetailBody } from '../session/validation.js';

export const ShapeAInner = Type.Object({
  message: Type.String(),
  type: Type.String(),
  param: Type.Null(),
  code: Type.Union([Type.String(), Type.Null()]),
});

export const ShapeA = Type.Object(
  {
    error: Type.Object({
      // A string, except client-secrets' 401, where the message is itself an error object.
      message: Type.Union([Type.String(), ShapeAInner]),
      type: Type.String(),
      param: Type.Null(),
      code: Type.Union([Type.String(), Type.Null()]),
    }),
  },
  { $id: 'ShapeA', description: 'Error object (401, 403, 404 on resources, 413, 503)' },
);
export type ShapeABody = Static<typeof ShapeA>;


export const ShapeB = Type.Object(
  { detail: Type.Array(ValidationDetail) },
  { $id: 'ShapeB', description: 'Validation error (422), one entry per problem' },
);

export const ERROR_TYPE = 'invalid_request_error';

export function shapeA(message: string, code: string | null = null): ShapeABody {
  return { error: { message, type: ERROR_TYPE, param: null, code } };
}

/** client-secrets' 401: the message is itself an error object (as the reference service answers). */
export function nestedApiKeyError(): ShapeABody {
  return {
    error: {
      message: { message: 'Incorrect API key provided or the API key is inactive.', type: ERROR_TYPE, param: null, code: null },
      type: ERROR_TYPE,
      param: null,
      code: null,
    },
  };
}

export const MESSAGES = {
  notAuthenticated: 'Not authenticated',
  invalidToken: 'The ephemeral token is invalid or has expired.',
  bodyTooLarge: 'Request body is larger than the 256 KiB limit.',
} as const;

/** OpenAI's error object (its routes: client_secrets, the SDP forms of calls, hangup): param names the field. */
export const OpenAiErrorBody = Type.Object(
  {
    error: Type.Object({
      message: Type.String(),
      type: Type.String(),
      param: Type.Union([Type.String(), Type.Null()]),
      code: Type.Union([Type.String(), Type.Null()]),
    }),
  },
  { $id: 'OpenAiError', description: 'Error object of the OpenAI-compatible routes' },
);

export function openAiError(status: number, code: string | null, message: string, param: string | null = null, headers: Record<string, string> = {}): HttpError {
  return new HttpError(status, { error: { message, type: status >= 500 ? 'server_error' : ERROR_TYPE, param, code } } as unknown as ShapeABody, headers);
}

/** An error a handler throws to answer 422 in Shape B. */
export class ValidationFailure extends Error {
  constructor(readonly detail: ValidationDetailBody[]) {
    super(detail.map((d) => d.msg).join('; '));
  }
}

/** An error a handler throws to answer a status with a Shape A body. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly body: ShapeABody,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof body.error.message === 'string' ? body.error.message : body.error.message.message);
  }
}
