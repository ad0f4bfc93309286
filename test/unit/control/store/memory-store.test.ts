import { MemoryStore } from '../../../../control/store/memory.js';
import { storeConformance } from './conformance.js';

// Separate MemoryStores share nothing, so the "other handle" is the same instance.
storeConformance('MemoryStore', async () => {
  const store = new MemoryStore();
  return { store, peer: store, cleanup: () => store.close() };
});
