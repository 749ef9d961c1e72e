// Vision costs (bench/results/vision.md): the CPU and time of one picture (an ffmpeg process per key
// frame: decode, scale to 768 px, JPEG), of ffmpeg's start alone, and what a camera costs between
// turns (the RTP assembly and the camera keeping its last key frame; nothing decoded), per second of
// a 640×480 30 fps VP8 stream.
//   node --import tsx bench/vision.ts [runs]
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Camera } from '../src/agent/vision/camera.ts';
import { StillDecoder, type StillSource } from '../src/media/stillImage.ts';
import { VideoReceiver } from '../src/media/videoReceiver.ts';

const runs = Number(process.argv[2] ?? 20);
const TICK_MS = 10; // USER_HZ 100

/** CPU of this process's waited-for children so far (ms), from /proc/self/stat (cutime + cstime). */
function childrenCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) * TICK_MS;
}

const ffmpeg = (args: string[]) => execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', ...args, 'pipe:1'], { maxBuffer: 1 << 26 });
const source = (codec: 'vp8' | 'h264', size: string): StillSource => {
  const input = ['-f', 'lavfi', '-i', `testsrc2=s=${size}`, '-frames:v', '1'];
  return codec === 'vp8'
    ? { kind: 'vp8', frame: ffmpeg([...input, '-c:v', 'libvpx', '-b:v', '2M', '-f', 'ivf']).subarray(44) }
    : { kind: 'h264', frame: ffmpeg([...input, '-c:v', 'libx264', '-f', 'h264']) };
};

async function measure(name: string, src: StillSource): Promise<void> {
  const decoder = new StillDecoder({ concurrency: 1, longSide: 768 });
  await decoder.decode(src); // warm the page cache
  const cpu0 = process.cpuUsage();
  const child0 = childrenCpuMs();
  const walls: number[] = [];
  let bytes = 0;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const image = await decoder.decode(src);
    walls.push(performance.now() - t);
    bytes = image.jpeg.length;
  }
  const parent = process.cpuUsage(cpu0);
  const childMs = (childrenCpuMs() - child0) / runs;
  const parentMs = (parent.user + parent.system) / 1000 / runs;
  walls.sort((a, b) => a - b);
  const frame = src.kind === 'image' ? src.bytes : src.frame;
  console.log(
    `${name.padEnd(22)} key frame ${(frame.length / 1024).toFixed(0).padStart(5)} kB → JPEG ${(bytes / 1024).toFixed(0).padStart(3)} kB: ` +
      `wall median ${walls[Math.floor(runs / 2)]!.toFixed(0)} ms, CPU ${(childMs + parentMs).toFixed(0)} ms (ffmpeg ${childMs.toFixed(0)}, node ${parentMs.toFixed(1)})`,
  );
}

function ffmpegStart(): void {
  const child0 = childrenCpuMs();
  const t = performance.now();
  for (let i = 0; i < runs; i++) execFileSync('ffmpeg', ['-hide_banner', '-version']);
  console.log(`ffmpeg start alone (-version): wall ${((performance.now() - t) / runs).toFixed(0)} ms, CPU ${((childrenCpuMs() - child0) / runs).toFixed(0)} ms`);
}

/** The receive path between turns: RTP packets of 1,100 bytes assembled into frames, the camera keeping key frames. */
function idleCamera(): void {
  const fps = 30;
  const bitrate = 1_000_000; // what Chrome sends a 640×480 camera at, about
  const frameBytes = bitrate / 8 / fps;
  const perFrame = Math.ceil(frameBytes / 1100);
  const seconds = 60;
  const packets: Buffer[] = [];
  let seq = 0;
  for (let f = 0; f < fps * seconds; f++) {
    for (let p = 0; p < perFrame; p++) {
      const h = Buffer.alloc(12 + 1 + 1100);
      h[0] = 0x80;
      h[1] = (p === perFrame - 1 ? 0x80 : 0) | 96;
      h.writeUInt16BE(seq++ & 0xffff, 2);
      h.writeUInt32BE(f * 3000, 4);
      h.writeUInt32BE(42, 8);
      h[12] = p === 0 ? 0x10 : 0; // VP8 descriptor: start of partition
      h[13] = f % 300 === 0 ? 0x00 : 0x01; // a key frame every 10 s (bit 0 clear)
      packets.push(h);
    }
  }
  const camera = new Camera({ decoder: {} as StillDecoder, requestKeyframe: () => true, keyframeWaitMs: 400, failed: () => {} });
  const receiver = new VideoReceiver([{ payloadType: 96, name: 'VP8' }], (frame) => camera.onFrame(frame));
  for (const p of packets.slice(0, 5000)) receiver.handle(p); // warm up
  const cpu0 = process.cpuUsage();
  for (const p of packets) receiver.handle(p);
  const cpu = process.cpuUsage(cpu0);
  const perSecondMs = (cpu.user + cpu.system) / 1000 / seconds;
  console.log(
    `idle camera, 640×480 30 fps VP8 at 1 Mbit/s (${perFrame * fps} packets/s): ${perSecondMs.toFixed(2)} ms of CPU per second = ${(perSecondMs / 10).toFixed(3)} % of a core; ` +
      `held between turns: the last key frame (${(frameBytes / 1024).toFixed(0)} kB here)`,
  );
}

ffmpegStart();
await measure('VP8 640×480', source('vp8', '640x480'));
await measure('H.264 640×480', source('h264', '640x480'));
await measure('VP8 1280×720', source('vp8', '1280x720'));
await measure('H.264 1920×1080', source('h264', '1920x1080'));
await measure('H.264 3840×2160 (4K)', source('h264', '3840x2160'));
idleCamera();
