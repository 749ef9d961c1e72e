// The voice agent's camera pictures: the caller's camera (key frame requested at a turn's pause or
// end, waited for and decoded), one picture per turn, attached to the turn's user item, and only
// the latest few kept on the conversation's items.
import type { StillDecoder, StillImage } from '../../media/stillImage.js';
import type { VideoFrameInfo } from '../../media/videoReceiver.js';
import { hasCameraPicture, type ContentPart, type MessageItem } from '../../session/conversation.js';
import type { Session } from '../../session/session.js';
import type { AgentContext } from '../types.js';
import { Camera } from '../vision/camera.js';

/** The camera's pictures a conversation keeps (the latest; each tens of kB). */
const MAX_CAMERA_PICTURES = 8;

export interface CameraPicturesDeps {
  /** Decodes the camera's key frame at the end of a turn (and clients' images); none: the camera is not used. */
  stills?: StillDecoder;
  /** How long a turn's end waits for the key frame it asked for. */
  keyframeWaitMs?: number;
  /** A camera picture was decoded in `ms` (from the key frame request), or put in a user message (metrics). */
  onPicture?(event: { decodedMs: number } | { sent: true }): void;
}

/** Where a turn keeps its picture: asked for at its first pause or at its end. */
export interface PictureSlot {
  picture?: Promise<StillImage | undefined>;
}

export class CameraPictures {
  /** The caller's camera, while the call has one and the session's modalities include video. */
  private readonly camera: Camera | undefined;

  constructor(
    private readonly ctx: AgentContext,
    private readonly deps: CameraPicturesDeps,
  ) {
    const { stills } = deps;
    const requestKeyframe = ctx.requestKeyframe?.bind(ctx);
    this.camera =
      stills && requestKeyframe
        ? new Camera({
            decoder: { decode: (source) => stills.decode(source, ctx.apiKeyId) },
            requestKeyframe,
            keyframeWaitMs: deps.keyframeWaitMs ?? 400,
            decoded: (ms) => deps.onPicture?.({ decodedMs: ms }),
            failed: (code, message, cause) => ctx.emit({ type: 'stage.failed', stage: 'vision', code, message, recoverable: true, ...(cause ? { cause } : {}) }),
          })
        : undefined;
  }

  /** A client's image, decoded. */
  decodeImage(bytes: Buffer): Promise<StillImage> {
    if (!this.deps.stills) return Promise.reject(new Error('This server decodes no images.'));
    return this.deps.stills.decode({ kind: 'image', bytes }, this.ctx.apiKeyId);
  }

  onFrame(frame: VideoFrameInfo): void {
    this.camera?.onFrame(frame);
  }

  /** A new turn started: the last turn's capture is done. */
  turnDone(): void {
    this.camera?.turnDone();
  }

  /** The camera's picture for `turn` (one capture per turn); undefined without a camera or video in the modalities. */
  pictureFor(turn: PictureSlot, session: Session): Promise<StillImage | undefined> {
    if (!this.camera?.active || !session.modalities.includes('video')) return Promise.resolve(undefined);
    turn.picture ??= this.camera.capture();
    return turn.picture;
  }

  /** The turn's picture goes after its words on its user item. */
  attach(item: MessageItem, image: StillImage): void {
    item.content.push(...withPicture([], image));
    this.deps.onPicture?.({ sent: true });
    this.forgetOldPictures();
  }

  close(): void {
    this.camera?.close();
  }

  /**
   * Only the last MAX_CAMERA_PICTURES of the camera's pictures stay on their items (tens of kB each),
   * so a long call's memory stays bounded; older user items keep their words.
   */
  private forgetOldPictures(): void {
    const withPictures = this.ctx.conversation.items.filter(hasCameraPicture);
    for (const old of withPictures.slice(0, -MAX_CAMERA_PICTURES)) {
      if (old.type === 'message') old.content = old.content.filter((c) => !(c.type === 'input_image' && c.source === 'camera'));
    }
  }
}

/** A user message's content with the camera's picture after its words, when there is one. */
export function withPicture(content: ContentPart[], image: StillImage | undefined): ContentPart[] {
  return image ? [...content, { type: 'input_image', image, detail: 'auto', source: 'camera' }] : content;
}
