// The one shared state object of the page: the record (SML text), the dataset, and a
// tiny event bus. Model View, data panel and run panel all read and write it here.
export function createApp() {
  const handlers = new Map();
  return {
    record: "",        // SML text of the record being edited / trained
    recordName: "",    // which example or file it came from
    dataset: null,     // {name, hash, ...} once the data panel has loaded one
    storeAway: false,  // another window (a detached run, or its tab) holds the run store
    setStoreAway(away) {
      this.storeAway = away;
      this.emit("store-away", away);
    },
    on(event, fn) {
      if (!handlers.has(event)) handlers.set(event, new Set());
      handlers.get(event).add(fn);
      return () => handlers.get(event).delete(fn);
    },
    emit(event, payload) {
      for (const fn of handlers.get(event) || []) {
        try { fn(payload); } catch (e) { console.error(`app.on(${event}) handler failed`, e); }
      }
    },
  };
}
