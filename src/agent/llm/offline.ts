// `parley-offline`: a small rule-based conversational model that needs no weights. It is honest
// about what it is, follows a few things from `instructions` (a name, brevity), uses the
// conversation history (remembers the caller's name, refers back to the last topic). It is not a
// vision model: shown a picture (the caller's camera, an input_image), it says only what can be
// computed from the pixels — the dominant colours and the brightness — and that it cannot see.
import { readColours } from '../vision/colours.js';
import { lastUserText } from './messages.js';
import type { ChatImage, ChatMessage, ReplyModel, ReplyRequest } from './types.js';

interface Rule {
  match: RegExp;
  answer: (m: RegExpMatchArray, ctx: Context) => string;
}

interface Context {
  assistantName: string;
  callerName: string | undefined;
  /** Earlier messages (without the one being answered). */
  history: ChatMessage[];
  brief: boolean;
  /** The latest picture the caller showed in this conversation, if any. */
  picture: ChatImage | undefined;
}

const pick = <T>(items: T[], seed: number): T => items[seed % items.length]!;

// Made once: toLocale*String builds a formatter (and loads its locale data) on every call, ms each.
const TIME = new Intl.DateTimeFormat('en-US', { hour: 'numeric', minute: '2-digit' });
const DATE = new Intl.DateTimeFormat('en-US', { weekday: 'long', month: 'long', day: 'numeric' });

const RULES: Rule[] = [
  {
    // "you see" alone too: the recogniser often garbles the words before it ("white collar do you see").
    match: /\b(what|which) colou?rs?\b|\byou see\b|\bwhat am i (holding|showing)\b|\blook at (this|that|me)\b|\bhow (bright|dark) is it\b/i,
    answer: (_m, c) =>
      c.picture
        ? `I'm not a vision model, but the picture is ${readColours(c.picture.image.swatch).words}.`
        : "I can't see anything: no camera picture or image has reached me in this conversation.",
  },
  { match: /\b(my name is|i am called|call me)\s+([a-z]+)/i, answer: (m) => `Nice to meet you, ${capitalise(m[2]!)}. How can I help?` },
  {
    match: /\b(what('s| is) my name|do you (know|remember) my name)\b/i,
    answer: (_m, c) => (c.callerName ? `Your name is ${c.callerName}.` : "You haven't told me your name yet."),
  },
  { match: /\b(what('s| is) your name|who are you|what are you)\b/i, answer: (_m, c) => `I'm ${c.assistantName}, a small offline voice assistant running on this server. I don't use a large language model, so my answers are simple.` },
  { match: /\b(what time is it|what's the time|the time)\b/i, answer: () => `It is ${TIME.format(new Date())}.` },
  { match: /\b(what day is it|what('s| is) the date|today's date|what is today)\b/i, answer: () => `Today is ${DATE.format(new Date())}.` },
  { match: /\bhow are you\b/i, answer: () => "I'm doing well, thank you for asking. How are you?" },
  { match: /\b(weather|temperature outside|rain)\b/i, answer: () => "I can't check the weather: I run offline, without internet access." },
  { match: /\b(what can you do|help me|how do you work)\b/i, answer: () => 'I can chat a little, tell you the time and date, and remember what you told me in this conversation.' },
  { match: /\b(thank you|thanks)\b/i, answer: (_m, c) => pick(["You're welcome.", 'Glad to help.', 'Any time.'], c.history.length) },
  { match: /\b(bye|goodbye|see you)\b/i, answer: () => 'Goodbye! Talk to you soon.' },
  { match: /\b(what did (i|we) (say|talk about)|what was i saying)\b/i, answer: (_m, c) => lastUserTopic(c) },
  { match: /^\s*(hi|hello|hey|good (morning|afternoon|evening))\b/i, answer: (_m, c) => (c.callerName ? `Hello again, ${c.callerName}! What can I do for you?` : `Hello! I'm ${c.assistantName}. What can I do for you?`) },
];

function capitalise(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1).toLowerCase();
}

function lastUserTopic(c: Context): string {
  const previous = [...c.history].reverse().find((t) => t.role === 'user');
  return previous ? `Earlier you said: "${previous.content}".` : "This is the start of our conversation.";
}

function contextOf(req: ReplyRequest, history: ChatMessage[]): Context {
  const named = req.instructions?.match(/\b(?:your name is|you are|call yourself)\s+([A-Z][a-z]+)/);
  let callerName: string | undefined;
  for (const turn of history) {
    const m = turn.role === 'user' ? turn.content.match(/\b(?:my name is|i am called|call me)\s+([a-z]+)/i) : null;
    if (m) callerName = capitalise(m[1]!);
  }
  let picture: ChatImage | undefined;
  for (const m of req.messages) if (m.role === 'user' && m.images?.length) picture = m.images.at(-1);
  return {
    picture,
    assistantName: named?.[1] ?? 'Parley',
    callerName,
    history,
    brief: /\b(brief|short|concise)\b/i.test(req.instructions ?? ''),
  };
}

/** The reply to the conversation's last user message. */
export function offlineReply(req: ReplyRequest): string {
  const text = lastUserText(req.messages);
  const last = req.messages.map((m) => m.role).lastIndexOf('user');
  const ctx = contextOf(req, last >= 0 ? req.messages.slice(0, last) : req.messages);
  for (const rule of RULES) {
    const m = text.match(rule.match);
    if (m) return rule.answer(m, ctx);
  }
  if (ctx.brief) return `I heard: ${text}.`;
  // Higher temperature, more varied fallbacks.
  const fallbacks = [
    `You said: ${text}. Tell me more.`,
    `I heard "${text}". I'm a simple offline assistant, so I may not understand everything, but I'm listening.`,
    `Interesting. What would you like to know about that?`,
  ];
  const spread = Math.max(1, Math.round(req.temperature * fallbacks.length));
  return fallbacks[(ctx.history.length + text.length) % spread]!;
}

/** Verbs tool names start with, which say nothing of what the tool is about. */
const TOOL_VERBS = new Set(['get', 'set', 'fetch', 'find', 'lookup', 'look', 'up', 'check', 'read', 'list', 'search', 'query', 'do', 'run', 'call', 'make', 'the', 'current']);

/** The words of a tool's name that say what it is about (get_weather → weather, lookupOrderStatus → order, status). */
function topicWords(name: string): string[] {
  return name
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 1 && !TOOL_VERBS.has(w));
}

/**
 * The tool the user's last words name (a word of its name, as in "what's the weather" for
 * get_weather), or the one tool_choice requires; none after a tool's output (that is answered).
 */
export function offlineToolCall(req: ReplyRequest): string | undefined {
  if (!req.tools.length || req.toolChoice === 'none' || req.messages.at(-1)?.role !== 'user') return undefined;
  if (typeof req.toolChoice === 'object') return req.tools.find((t) => t.name === (req.toolChoice as { name: string }).name)?.name;
  const words = new Set(lastUserText(req.messages).toLowerCase().split(/[^a-z0-9]+/));
  const named = req.tools.find((t) => topicWords(t.name).some((w) => words.has(w) || words.has(`${w}s`)));
  return named?.name ?? (req.toolChoice === 'required' ? req.tools[0]!.name : undefined);
}

/**
 * A tool's arguments as the user's words give them: its number parameters from the numbers said, in
 * order; its string parameters from the phrase after the last "in", "for", "about", "of", "called"
 * or "named" ("the weather in Paris" → "Paris"). What cannot be found is left out.
 */
export function offlineArguments(parameters: Record<string, unknown> | undefined, text: string): string {
  const properties = (parameters?.properties ?? {}) as Record<string, { type?: string }>;
  const numbers = [...text.matchAll(/-?\d+(?:\.\d+)?/g)].map((m) => Number(m[0]));
  const phrase = /\b(?:in|for|about|of|called|named)\s+([^.,?!]+?)\s*[.?!]*$/i.exec(text.trim())?.[1];
  const args: Record<string, unknown> = {};
  for (const [name, p] of Object.entries(properties)) {
    if ((p.type === 'number' || p.type === 'integer') && numbers.length) args[name] = numbers.shift();
    else if (p.type === 'string' && phrase) args[name] = phrase;
  }
  return JSON.stringify(args);
}

/**
 * Calls a tool when the user's words name it (its arguments as offlineArguments finds them), and says
 * what the tool answered; otherwise the rules above.
 */
export const offlineModel: ReplyModel = {
  name: 'parley-offline',
  async *reply(req: ReplyRequest) {
    const tool = offlineToolCall(req);
    if (tool) {
      const definition = req.tools.find((t) => t.name === tool)!;
      yield { type: 'tool_call', index: 0, name: tool, argumentsDelta: offlineArguments(definition.parameters, lastUserText(req.messages)) };
      return;
    }
    const last = req.messages.at(-1);
    // Stream word by word, as a generating model would.
    const answer = last?.role === 'tool' ? (last.content.startsWith('The tool failed') ? `${last.content}` : `The tool says: ${last.content}`) : offlineReply(req);
    const words = answer.split(/(?<=\s)/);
    for (const w of words) {
      if (req.signal.aborted) return;
      yield { type: 'text', delta: w };
    }
  },
};
