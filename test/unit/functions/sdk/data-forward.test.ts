import test from 'ava';
import { z } from 'zod';
import { CompositeTask, DataForward, dataForwardSchema, isDataForwardJSON } from '../../../../functions/sdk/index.js';
import { EncoderTask, ImageGeneratorTask } from '../../../../functions/tasks/index.js';
import { FakeDispatcher } from '../../../helpers/fake-dispatcher.js';
import { MODEL } from '../fixtures.js';

test('a DataForward survives its JSON form with id, type and ranks', (t) => {
  const df = DataForward.tensor();
  df.srcSidecarRanks = [0, 1];
  df.dstSidecarRanks = [[2], [3, 4]];
  t.deepEqual(DataForward.fromJSON(df.toJSON()), df);
});

test('a new DataForward has a 32-character lowercase hex id and no ranks yet', (t) => {
  const df = DataForward.tensor();
  t.deepEqual([/^[0-9a-f]{32}$/.test(df.id), df.srcSidecarRanks, df.dstSidecarRanks], [true, null, null]);
});

test('dataForwardSchema turns the JSON form into a DataForward instance', (t) => {
  const json = DataForward.tensor().toJSON();
  const parsed = dataForwardSchema('tensor').parse(json);
  t.true(parsed instanceof DataForward && parsed.id === json.id);
});

test('dataForwardSchema rejects a forward of another data type', (t) => {
  t.false(dataForwardSchema('tensor').safeParse(new DataForward('bytes')).success);
});

test('dataForwardSchema rejects an id that is not lowercase hex', (t) => {
  t.false(dataForwardSchema('tensor').safeParse({ ...DataForward.tensor().toJSON(), id: 'ABC-1' }).success);
});

test('isDataForwardJSON is false for an object with extra fields', (t) => {
  t.false(isDataForwardJSON({ ...DataForward.tensor().toJSON(), extra: 1 }));
});

test('a DataForward inside a plain object schema keeps its identity', (t) => {
  const df = DataForward.tensor();
  t.is(z.object({ e: dataForwardSchema('tensor') }).parse({ e: df }).e, df);
});

/** Encodes one image and generates from it; returns the encoder's forward as replay sees it. */
class EncodeThenGenerate extends CompositeTask<{ url: string }, DataForward> {
  readonly encoder = new EncoderTask({ modality: 'image', modelIds: [MODEL] });
  readonly generator = new ImageGeneratorTask({ modelId: 'org/tiny-image-gen' });
  get name() {
    return 'encode-then-generate';
  }
  invoke(input: { url: string }): DataForward {
    const df = this.encoder.invoke({ model_id: MODEL, data_urls: [input.url] }).embeddings[0]!;
    this.generator.invoke({ embeddings: df, height: 8, width: 8 });
    return df;
  }
}

test('replayed DataForwards carry the sidecar ranks the dispatcher filled in', async (t) => {
  const fake = new FakeDispatcher({ ranks: (_inv, i) => [10 * i, 10 * i + 1] });
  const df = await new EncodeThenGenerate().call({ url: 'http://x/a.png' }, { dispatcher: fake });
  t.deepEqual([df.srcSidecarRanks, df.dstSidecarRanks], [[0, 1], [[10, 11]]]);
});

test('replayed DataForwards keep the ids recorded in the graph', async (t) => {
  const fake = new FakeDispatcher();
  const df = await new EncodeThenGenerate().call({ url: 'http://x/a.png' }, { dispatcher: fake });
  t.is(df.id, (fake.graphs[0]!.invocations[1]!.input as { embeddings: { id: string } }).embeddings.id);
});
