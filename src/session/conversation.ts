// The conversation of a call as an ordered list of items with ids — the caller's turns, the agent's
// replies, function calls and their outputs — shared by the agent that answers and the protocol
// that reports it. It outlives any one agent (a model switch keeps it) and can be resumed.
import type { StillImage } from '../media/stillImage.js';
import { randomId } from '../system/ids.js';

/** OpenAI's `detail` of an input image: how closely a vision model is asked to look. */
export type ImageDetail = 'auto' | 'low' | 'high';

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

export type ContentPart =
  | { type: 'input_text'; text: string }
  | { type: 'input_audio'; transcript: string | null }
  | { type: 'output_text'; text: string }
  | { type: 'output_audio'; transcript: string | null }
  /**
   * A picture: the caller's camera at the end of a turn, or a client's input_image. Kept as the JPEG
   * the model is sent (at most VISION_IMAGE_LONG_SIDE on its long side, tens of kB), not the original.
   */
  | { type: 'input_image'; image: StillImage; detail: ImageDetail; source: 'camera' | 'client' };

export interface MessageItem {
  id: string;
  type: 'message';
  role: 'user' | 'assistant' | 'system';
  status: ItemStatus;
  content: ContentPart[];
}

export interface FunctionCallItem {
  id: string;
  type: 'function_call';
  status: ItemStatus;
  callId: string;
  name: string;
  arguments: string;
}

export interface FunctionCallOutputItem {
  id: string;
  type: 'function_call_output';
  status: 'completed';
  callId: string;
  output: string;
}

/** The tools an MCP server offers (OpenAI `mcp_list_tools`), listed when the session names the server. */
export interface McpListToolsItem {
  id: string;
  type: 'mcp_list_tools';
  status: ItemStatus;
  serverLabel: string;
  tools: { name: string; description?: string; inputSchema: Record<string, unknown> }[];
}

/** A call of an MCP server's tool the model made, and what it answered (`output`) or why it failed (`error`). */
export interface McpCallItem {
  id: string;
  type: 'mcp_call';
  status: ItemStatus;
  serverLabel: string;
  name: string;
  arguments: string;
  approvalRequestId: string | null;
  output: string | null;
  error: string | null;
}

/** The model wants to call a tool that needs the client's approval first. */
export interface McpApprovalRequestItem {
  id: string;
  type: 'mcp_approval_request';
  status: 'completed';
  serverLabel: string;
  name: string;
  arguments: string;
}

/** The client's answer to an approval request. */
export interface McpApprovalResponseItem {
  id: string;
  type: 'mcp_approval_response';
  status: 'completed';
  approvalRequestId: string;
  approve: boolean;
  reason: string | null;
}

export type McpItem = McpListToolsItem | McpCallItem | McpApprovalRequestItem | McpApprovalResponseItem;

export type Item = MessageItem | FunctionCallItem | FunctionCallOutputItem | McpItem;

/** A piece of an assistant item's audio and the words it speaks. */
interface SpokenSegment {
  startMs: number;
  durationMs: number;
  text: string;
}

/** Items kept per call; the oldest go first (a model's context is bounded anyway). */
const MAX_ITEMS = 2000;

export const newItemId = (): string => randomId('item_', 12);

export type PlaceResult = { ok: true; previousItemId: string | null } | { ok: false; message: string };

export class Conversation {
  private readonly list: Item[] = [];
  private readonly timelines = new Map<string, SpokenSegment[]>();

  get items(): readonly Item[] {
    return this.list;
  }

  get(id: string): Item | undefined {
    return this.list.find((i) => i.id === id);
  }

  /**
   * Adds an item: at the end (`after` undefined), first (`after` null or 'root'), or after the item
   * with that id. Fails when the id is taken or `after` names no item.
   */
  add(item: Item, after?: string | null): PlaceResult {
    if (this.get(item.id)) return { ok: false, message: `An item with id '${item.id}' already exists.` };
    let index = this.list.length;
    if (after === null || after === 'root') index = 0;
    else if (after !== undefined) {
      const at = this.list.findIndex((i) => i.id === after);
      if (at < 0) return { ok: false, message: `No item with id '${after}' (previous_item_id) exists.` };
      index = at + 1;
    }
    this.list.splice(index, 0, item);
    if (this.list.length > MAX_ITEMS) this.forget(this.list[0]!.id);
    return { ok: true, previousItemId: index > 0 ? this.list[index - 1]!.id : null };
  }

  /** The id of the item before item `id` (null when it is first or not there). */
  previousOf(id: string): string | null {
    const at = this.list.findIndex((i) => i.id === id);
    return at > 0 ? this.list[at - 1]!.id : null;
  }

  delete(id: string): boolean {
    if (!this.get(id)) return false;
    this.forget(id);
    return true;
  }

  /**
   * Records that the next `durationMs` of an assistant item's audio speak `text`; '' continues the
   * previous text (a clause synthesised in several chunks).
   */
  addSpoken(id: string, durationMs: number, text: string): void {
    let timeline = this.timelines.get(id);
    if (!timeline) this.timelines.set(id, (timeline = []));
    const last = timeline.at(-1);
    if (last && !text) last.durationMs += durationMs;
    else timeline.push({ startMs: last ? last.startMs + last.durationMs : 0, durationMs, text });
  }

  /** Milliseconds of audio an assistant item has so far. */
  audioMs(id: string): number {
    const last = this.timelines.get(id)?.at(-1);
    return last ? last.startMs + last.durationMs : 0;
  }

  /**
   * Cuts an assistant item's audio at `audioEndMs` (what the caller heard): its transcript keeps the
   * words spoken by then, so the model's context holds only what was said. Returns the new transcript.
   */
  truncate(id: string, audioEndMs: number): { ok: true; transcript: string } | { ok: false; message: string } {
    const item = this.get(id);
    if (!item || item.type !== 'message' || item.role !== 'assistant') {
      return { ok: false, message: `No assistant message with id '${id}' exists.` };
    }
    const part = item.content.find((c) => c.type === 'output_audio');
    if (!part || part.type !== 'output_audio') return { ok: false, message: `Item '${id}' has no audio to truncate.` };
    if (audioEndMs > this.audioMs(id)) {
      return { ok: false, message: `audio_end_ms ${audioEndMs} is beyond the item's audio (${Math.round(this.audioMs(id))} ms).` };
    }
    const heard: string[] = [];
    for (const seg of this.timelines.get(id) ?? []) {
      if (seg.startMs >= audioEndMs) break;
      const fraction = Math.min(1, (audioEndMs - seg.startMs) / Math.max(1, seg.durationMs));
      const words = seg.text.trim().split(/\s+/).filter(Boolean);
      // A clause cut short keeps the share of its words that had been spoken.
      heard.push(words.slice(0, Math.floor(words.length * fraction + 1e-9)).join(' '));
    }
    part.transcript = heard.filter(Boolean).join(' ');
    item.status = 'incomplete';
    this.timelines.set(id, (this.timelines.get(id) ?? []).filter((s) => s.startMs < audioEndMs));
    return { ok: true, transcript: part.transcript };
  }

  private forget(id: string): void {
    const at = this.list.findIndex((i) => i.id === id);
    if (at >= 0) this.list.splice(at, 1);
    this.timelines.delete(id);
  }
}

/** The pictures a message carries; `camera: false` leaves the camera's out. */
export function itemImages(item: Item, camera = true): { image: StillImage; detail: ImageDetail }[] {
  if (item.type !== 'message') return [];
  return item.content.flatMap((c) => (c.type === 'input_image' && (camera || c.source !== 'camera') ? [{ image: c.image, detail: c.detail }] : []));
}

/** Whether a message carries a picture of the caller's camera. */
export const hasCameraPicture = (item: Item): boolean => item.type === 'message' && item.content.some((c) => c.type === 'input_image' && c.source === 'camera');

/** A picture as a data URL (what the wire and the conversation API show). */
export function imageDataUrl(image: StillImage): string {
  return `data:image/jpeg;base64,${image.jpeg.toString('base64')}`;
}

/** The text an item carries (a message's text or transcript parts), '' for others. */
export function itemText(item: Item): string {
  if (item.type !== 'message') return '';
  return item.content
    .map((c) => (c.type === 'input_text' || c.type === 'output_text' ? c.text : c.type === 'input_image' ? '' : (c.transcript ?? '')))
    .filter(Boolean)
    .join(' ');
}
