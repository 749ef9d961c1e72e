export default function durations(source: AsyncIterable<unknown>): AsyncGenerator<string>;
