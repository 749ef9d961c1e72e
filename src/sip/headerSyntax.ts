// The grammar of the header fields a request's handling relies on (RFC 3261 §25.1), checked as a
// request is read: a Via's sent-protocol, sent-by and parameters; a From, To, Contact or Route's
// display name, URI and parameters. Linear whitespace is allowed where the grammar allows it (around
// `/` in a Via, `;` and `=` between parameters); what RFC 4475 calls malformed is named, for a 400.

/** RFC 3261's token characters. */
export const TOKEN_CHARS = "A-Za-z0-9.!%*_+`'~-";
const TOKEN = new RegExp(`^[${TOKEN_CHARS}]+$`);
/** `;name` or `;name=value` (a token, a host with an IPv6 reference or address, or a quoted string). */
const PARAM = new RegExp(`^;\\s*[${TOKEN_CHARS}]+(?:\\s*=\\s*(?:"(?:[^"\\\\]|\\\\[^])*"|\\[[0-9A-Fa-f:.]+\\]|[:${TOKEN_CHARS}]+))?\\s*`);
/** SIP/2.0/UDP host[:port], spaces allowed around the slashes and the colon; then its parameters. */
const VIA = new RegExp(`^SIP\\s*/\\s*\\d+\\.\\d+\\s*/\\s*[${TOKEN_CHARS}]+\\s+(?:\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9._-]+)(?:\\s*:\\s*\\d{1,5})?\\s*`);
/** An absolute URI's scheme and colon. */
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/** What is wrong with a `;param` list (empty, or neither a token nor token=value), if anything. */
function paramsProblem(params: string): string | undefined {
  let rest = params.trim();
  while (rest) {
    const m = PARAM.exec(rest);
    if (!m) return 'a malformed or empty parameter';
    rest = rest.slice(m[0].length);
  }
  return undefined;
}

/** What is wrong with one Via value (a via-parm), if anything. */
export function viaProblem(value: string): string | undefined {
  const m = VIA.exec(value);
  if (!m) return 'a malformed Via';
  const params = paramsProblem(value.slice(m[0].length));
  return params && `${params} in a Via`;
}

/** The end of the quoted string that starts at `value[start]` (its closing quote), or -1. */
export function quotedEnd(value: string, start: number): number {
  for (let i = start + 1; i < value.length; i++) {
    if (value[i] === '\\') i++;
    else if (value[i] === '"') return i;
  }
  return -1;
}

/**
 * What is wrong with one From, To, Contact, Route or Record-Route value (a name-addr or, unless
 * `nameAddrOnly`, an addr-spec), then its parameters, if anything.
 */
export function addressProblem(value: string, nameAddrOnly = false): string | undefined {
  const s = value.trim();
  let uriStart: number;
  if (s.startsWith('"')) {
    const end = quotedEnd(s, 0);
    if (end < 0) return 'an unterminated quoted string';
    uriStart = s.indexOf('<', end);
    if (uriStart < 0 || s.slice(end + 1, uriStart).trim()) return 'a display name without <URI>';
  } else {
    uriStart = s.indexOf('<');
    // An unquoted display name is tokens separated by spaces.
    const display = uriStart < 0 ? '' : s.slice(0, uriStart).trim();
    if (display && !display.split(/\s+/).every((word) => TOKEN.test(word))) return 'an unquoted display name with characters outside a token';
  }
  if (uriStart >= 0) {
    const close = s.indexOf('>', uriStart);
    if (close < 0) return 'a < without >';
    const uri = s.slice(uriStart + 1, close);
    if (/\s/.test(uri)) return 'spaces inside <URI>';
    if (!SCHEME.test(uri)) return 'no URI inside <>';
    return paramsProblem(s.slice(close + 1));
  }
  if (nameAddrOnly) return 'a URI not enclosed in <>';
  // An addr-spec: its parameters are the header's; a URI with `,` `?` or spaces must be in <> (§20).
  const semicolon = s.indexOf(';');
  const uri = (semicolon < 0 ? s : s.slice(0, semicolon)).trim();
  if (!SCHEME.test(uri)) return 'no URI';
  if (/[\s,?]/.test(uri)) return 'a URI with spaces, a comma or a question mark not enclosed in <>';
  return semicolon < 0 ? undefined : paramsProblem(s.slice(semicolon));
}
