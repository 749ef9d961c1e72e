// What can honestly be said about a picture without a vision model: its dominant colours and its
// brightness, in plain words ("mostly red, bright"), computed from the decoder's small RGB swatch.

export interface ColourReading {
  /** The colour names covering most of the picture, most first (one or two). */
  colours: string[];
  brightness: 'dark' | 'dim' | 'bright' | 'very bright';
  /** "mostly red, bright" */
  words: string;
}

/** The name of one RGB colour (0–255 each), by hue, saturation and lightness. */
export function colourName(r: number, g: number, b: number): string {
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  const light = (max + min) / 2 / 255;
  const chroma = (max - min) / 255;
  if (chroma < 0.15) {
    if (light < 0.2) return 'black';
    if (light > 0.8) return 'white';
    return 'grey';
  }
  let hue: number;
  if (max === r) hue = ((g - b) / (max - min)) * 60;
  else if (max === g) hue = ((b - r) / (max - min)) * 60 + 120;
  else hue = ((r - g) / (max - min)) * 60 + 240;
  if (hue < 0) hue += 360;
  if (hue < 15 || hue >= 335) return light < 0.3 && chroma < 0.5 ? 'brown' : 'red';
  if (hue < 40) return light < 0.4 ? 'brown' : 'orange';
  if (hue < 70) return 'yellow';
  if (hue < 160) return 'green';
  if (hue < 200) return 'cyan';
  if (hue < 255) return 'blue';
  if (hue < 290) return 'purple';
  return 'pink';
}

/** The dominant colours and brightness of an RGB swatch (3 bytes a pixel). */
export function readColours(rgb: Uint8Array): ColourReading {
  const counts = new Map<string, number>();
  let luma = 0;
  const pixels = Math.floor(rgb.length / 3);
  for (let i = 0; i < pixels; i++) {
    const r = rgb[i * 3]!;
    const g = rgb[i * 3 + 1]!;
    const b = rgb[i * 3 + 2]!;
    // Between luma (which calls pure red dim) and value (which calls it as bright as white).
    luma += (0.2126 * r + 0.7152 * g + 0.0722 * b + Math.max(r, g, b)) / 2;
    const name = colourName(r, g, b);
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  const ranked = [...counts].sort((a, b) => b[1] - a[1]);
  const [first, second] = ranked;
  const colours = [first?.[0] ?? 'black'];
  if (second && second[1] >= pixels * 0.25) colours.push(second[0]);
  const level = pixels ? luma / pixels / 255 : 0;
  const brightness = level < 0.15 ? 'dark' : level < 0.35 ? 'dim' : level < 0.75 ? 'bright' : 'very bright';
  const share = first ? first[1] / Math.max(1, pixels) : 0;
  const lead = colours.length > 1 ? `${colours[0]} and ${colours[1]}` : share > 0.9 ? `all ${colours[0]}` : `mostly ${colours[0]}`;
  return { colours, brightness, words: `${lead}, ${brightness}` };
}
