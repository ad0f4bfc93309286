import test from 'ava';
import sharp from 'sharp';
import { decodeWav } from '../../../../executors/models/preprocess/wav.js';
import { nextSpec, parseMix, parseSize, type MixOptions } from '../../../../bench/workload/mix.js';
import { syntheticPng, syntheticWav, videoUrl } from '../../../../bench/workload/media.js';
import { RandomSource } from '../../../../bench/workload/random.js';
import { chatRequestFor, parseDataset } from '../../../../bench/workload/requests.js';

const options = (mix: string): MixOptions => ({
  mix: parseMix(mix), inputLen: 100, outputLen: 20, rangeRatio: 0.5, image: { width: 64, height: 48 }, audioSeconds: 1, videoFrames: 3,
});

test('a mix parses to normalised weights', (t) => {
  t.deepEqual(parseMix('text:2,image:1,audio:1'), [{ kind: 'text', weight: 0.5 }, { kind: 'image', weight: 0.25 }, { kind: 'audio', weight: 0.25 }]);
});

test('a malformed mix is an error naming --mix and the part', (t) => {
  t.throws(() => parseMix('text:0.5,smell:0.5'), { message: /--mix: unknown kind 'smell'/ });
  t.throws(() => parseMix('text=0.5'), { message: /--mix: 'text=0.5' is not KIND:WEIGHT/ });
  t.throws(() => parseMix('text:1,text:1'), { message: /given twice/ });
  t.throws(() => parseMix('text:0'), { message: /no kind with a positive weight/ });
  t.throws(() => parseSize('1280by720'), { message: /--image-size/ });
});

test('the request mix follows its weights and its length ranges over a seeded run', (t) => {
  const o = options('text:0.4,image:0.4,audio:0.2');
  const rng = new RandomSource(9);
  const specs = Array.from({ length: 10_000 }, (_, i) => nextSpec(i, o, rng));
  const share = (k: string) => specs.filter((s) => s.kind === k).length / specs.length;
  t.true(Math.abs(share('text') - 0.4) < 0.02 && Math.abs(share('image') - 0.4) < 0.02 && Math.abs(share('audio') - 0.2) < 0.02);
  t.true(specs.every((s) => s.inputTokens >= 50 && s.inputTokens <= 150 && s.outputTokens >= 10 && s.outputTokens <= 30));
  t.true(specs.filter((s) => s.kind === 'image').every((s) => s.image?.width === 64 && s.image.height === 48));
  const again = new RandomSource(9);
  t.deepEqual(Array.from({ length: 100 }, (_, i) => nextSpec(i, o, again)), specs.slice(0, 100));
});

test('synthetic images are PNGs of the asked size, the same for the same seed', async (t) => {
  const png = syntheticPng(1280, 720, 3);
  const meta = await sharp(png).metadata();
  t.is(meta.format, 'png');
  t.deepEqual([meta.width, meta.height], [1280, 720]);
  t.deepEqual(syntheticPng(1280, 720, 3), png);
  t.notDeepEqual(syntheticPng(1280, 720, 4), png);
});

test('synthetic audio is a WAV of the asked length', (t) => {
  const pcm = decodeWav(syntheticWav(2.5, 1));
  t.is(pcm.channels[0]!.length / pcm.sampleRate, 2.5);
});

test('a synthetic video is a frame list of the asked number of PNG frames', async (t) => {
  const url = videoUrl(4, 32, 24, 0);
  const frames = url.slice(url.indexOf(',') + 1).split(',');
  t.true(url.startsWith('data:video/png;base64,'));
  t.is(frames.length, 4);
  t.is((await sharp(Buffer.from(frames[3]!, 'base64')).metadata()).width, 32);
});

test('a chat request for an image spec carries the text, the image and max_tokens with ignore_eos', (t) => {
  const spec = nextSpec(0, options('image:1'), new RandomSource(1));
  const req = chatRequestFor(spec, 'mllm');
  const body = req.body as { model: string; max_tokens: number; ignore_eos: boolean; stream: boolean; messages: Array<{ content: Array<{ type: string; text?: string }> }> };
  t.is(body.model, 'mllm');
  t.is(body.max_tokens, spec.outputTokens);
  t.true(body.ignore_eos && body.stream);
  t.deepEqual(body.messages[0]!.content.map((p) => p.type), ['text', 'image_url']);
  t.is(body.messages[0]!.content[0]!.text!.length, spec.inputTokens);
});

test('a dataset line that is not a JSON object, or a chat line without messages, is an error naming the line', (t) => {
  t.deepEqual(parseDataset('{"text":"a"}\n\n{"request_data":{"text":"b"}}\n', 'invoke'), [{ text: 'a' }, { text: 'b' }]);
  t.throws(() => parseDataset('{"text":"a"}\n{oops\n', 'invoke'), { message: /--dataset line 2: not valid JSON/ });
  t.throws(() => parseDataset('[1,2]\n', 'invoke'), { message: /--dataset line 1: expected a JSON object/ });
  t.throws(() => parseDataset('{"messages":[{"role":"user","content":"hi"}]}\n{"prompt":"x"}\n', 'chat'), { message: /--dataset line 2: a chat request needs a non-empty 'messages'/ });
  t.throws(() => parseDataset('\n\n', 'chat'), { message: /no requests/ });
});
