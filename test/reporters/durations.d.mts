export interface FileDuration { file: string; ms: number; tests: number; failed: number }
export class FileDurations {
  add(event: unknown): void;
  results(): FileDuration[];
}
export default function durations(source: AsyncIterable<unknown>): AsyncGenerator<string>;
