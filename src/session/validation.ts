// Pydantic v2's validation-error entries (the contract's Shape B), and the translation of Ajv's errors
// into their wording: the same shapes on HTTP (422) and on the data channel (error events).
import { Type, type Static } from '@sinclair/typebox';
import type { ErrorObject } from 'ajv';

export const ValidationDetail = Type.Object({
  type: Type.String(),
  loc: Type.Array(Type.Union([Type.String(), Type.Integer()])),
  msg: Type.String(),
  input: Type.Unknown(),
  ctx: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
}, { title: 'ValidationDetail', description: 'One problem, as pydantic v2 reports it' });
export type ValidationDetailBody = Static<typeof ValidationDetail>;

const LOC_ROOT: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

function pathOf(instancePath: string): (string | number)[] {
  if (!instancePath) return [];
  return instancePath
    .slice(1)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
}

function valueAt(root: unknown, path: (string | number)[]): unknown {
  let v: unknown = root;
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[p];
  }
  return v;
}

function quoteList(values: unknown[]): string {
  const q = values.map((v) => (typeof v === 'string' ? `'${v}'` : String(v)));
  return q.length > 1 ? `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]}` : (q[0] ?? '');
}

function typeError(expected: string, input: unknown): Pick<ValidationDetailBody, 'type' | 'msg'> {
  const isString = typeof input === 'string';
  switch (expected) {
    case 'string':
      return { type: 'string_type', msg: 'Input should be a valid string' };
    case 'number':
      return isString
        ? { type: 'float_parsing', msg: 'Input should be a valid number, unable to parse string as a number' }
        : { type: 'float_type', msg: 'Input should be a valid number' };
    case 'integer':
      return isString
        ? { type: 'int_parsing', msg: 'Input should be a valid integer, unable to parse string as an integer' }
        : { type: 'int_type', msg: 'Input should be a valid integer' };
    case 'boolean':
      return isString
        ? { type: 'bool_parsing', msg: 'Input should be a valid boolean, unable to interpret input' }
        : { type: 'bool_type', msg: 'Input should be a valid boolean' };
    case 'array':
      return { type: 'list_type', msg: 'Input should be a valid list' };
    case 'object':
      return { type: 'model_attributes_type', msg: 'Input should be a valid dictionary or object to extract fields from' };
    default:
      return { type: `${expected}_type`, msg: `Input should be a valid ${expected}` };
  }
}

export function toPydanticDetail(errors: ErrorObject[], context: string, data: unknown): ValidationDetailBody[] {
  const root = LOC_ROOT[context] ?? context;
  const out: ValidationDetailBody[] = [];
  const seen = new Set<string>();
  // A value of the wrong type also fails its const/enum/range checks: report only the type.
  const wrongType = new Set(errors.filter((e) => e.keyword === 'type').map((e) => e.instancePath));
  for (const err of errors) {
    if (err.keyword !== 'type' && err.keyword !== 'required' && wrongType.has(err.instancePath)) continue;
    const path = pathOf(err.instancePath);
    const input = valueAt(data, path);
    const p = err.params as Record<string, unknown>;
    let d: ValidationDetailBody;
    switch (err.keyword) {
      case 'required':
        d = { type: 'missing', loc: [root, ...path, String(p.missingProperty)], msg: 'Field required', input: null };
        break;
      case 'additionalProperties': {
        const name = String(p.additionalProperty);
        d = { type: 'extra_forbidden', loc: [root, ...path, name], msg: 'Extra inputs are not permitted', input: valueAt(input, [name]) };
        break;
      }
      case 'type': {
        const expected = String(p.type).split(',')[0] ?? 'value';
        d = { ...typeError(expected, input), loc: [root, ...path], input: input ?? null };
        break;
      }
      case 'const':
        d = { type: 'literal_error', loc: [root, ...path], msg: `Input should be ${quoteList([p.allowedValue])}`, input, ctx: { expected: quoteList([p.allowedValue]) } };
        break;
      case 'enum': {
        const allowed = p.allowedValues as unknown[];
        d = { type: 'literal_error', loc: [root, ...path], msg: `Input should be ${quoteList(allowed)}`, input, ctx: { expected: quoteList(allowed) } };
        break;
      }
      case 'maximum':
        d = { type: 'less_than_equal', loc: [root, ...path], msg: `Input should be less than or equal to ${p.limit}`, input, ctx: { le: p.limit } };
        break;
      case 'minimum':
        d = { type: 'greater_than_equal', loc: [root, ...path], msg: `Input should be greater than or equal to ${p.limit}`, input, ctx: { ge: p.limit } };
        break;
      case 'maxItems':
        d = {
          type: 'too_long',
          loc: [root, ...path],
          msg: `List should have at most ${p.limit} items after validation, not ${Array.isArray(input) ? input.length : '?'}`,
          input,
          ctx: { field_type: 'List', max_length: p.limit },
        };
        break;
      case 'maxLength':
        d = { type: 'string_too_long', loc: [root, ...path], msg: `String should have at most ${p.limit} characters`, input, ctx: { max_length: p.limit } };
        break;
      case 'minLength':
        d = { type: 'string_too_short', loc: [root, ...path], msg: `String should have at least ${p.limit} characters`, input, ctx: { min_length: p.limit } };
        break;
      case 'format':
        d = { type: 'value_error', loc: [root, ...path], msg: `value is not a valid ${p.format === 'email' ? 'email address' : String(p.format)}`, input };
        break;
      default:
        d = { type: 'value_error', loc: [root, ...path], msg: `Value error, ${err.message ?? 'invalid value'}`, input };
    }
    const key = `${d.type}|${d.loc.join('.')}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(d);
    }
  }
  return out;
}

/** Pydantic's answer to a body that is not JSON: the offset where decoding failed. */
export function jsonInvalid(raw: string, err: Error): ValidationDetailBody {
  const m = /position (\d+)/.exec(err.message);
  const offset = m ? Number(m[1]) : raw.length;
  return { type: 'json_invalid', loc: ['body', offset], msg: 'JSON decode error', input: {}, ctx: { error: err.message } };
}

/**
 * The offset of the first `[` or `{` nested deeper than `maxDepth` in JSON text, or -1. A linear scan
 * before parsing, so that no parser, validator or serialiser ever recurses that deep.
 */
export function jsonDepthOverflow(text: string, maxDepth: number): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > maxDepth) return i;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return -1;
}

/** Pydantic's (jiter's) answer to JSON nested too deep: json_invalid, "recursion limit exceeded". */
export function jsonTooDeep(offset: number): ValidationDetailBody {
  return { type: 'json_invalid', loc: ['body', offset], msg: 'JSON decode error', input: {}, ctx: { error: 'recursion limit exceeded' } };
}
