// A persistent (copy-on-write) map for the models fold.js builds.
//
// The page's models are immutable: each event gives a new model, and the time-travel history
// keeps old ones. A group of 1,000 partitions commits offsets ~200 times a second; copying a
// 1,000-entry Map for each commit was the page's largest cost (measured with Chromium's
// profiler under bench/dashboard.py). Here the entries live in BUCKETS small Maps chosen by a
// hash of the key: a change copies the bucket array and the buckets it touches, and shares the
// rest with the map it came from.
//
// Read like a Map (get, has, size, keys, values, entries, iteration); iteration order is by
// bucket, not by insertion. Pure module.

const BUCKETS = 64;
const EMPTY = new Map();

function bucketOf(key) {
  let h = 0;
  for (let i = 0; i < key.length; i++) h = (Math.imul(h, 31) + key.charCodeAt(i)) | 0;
  return (h >>> 0) % BUCKETS;
}

export class PersistentMap {
  constructor(buckets = null, size = 0) {
    this.buckets = buckets ?? new Array(BUCKETS).fill(EMPTY);
    this.size = size;
  }

  /** A map of `entries` ([key, value] pairs; keys are strings). */
  static from(entries) {
    return new PersistentMap().with(entries);
  }

  get(key) {
    return this.buckets[bucketOf(key)].get(key);
  }

  has(key) {
    return this.buckets[bucketOf(key)].has(key);
  }

  /** This map with `entries` set ([key, value] pairs). */
  with(entries) {
    const buckets = this.buckets.slice();
    const copied = new Set();
    let size = this.size;
    for (const [key, value] of entries) {
      const b = bucketOf(key);
      if (!copied.has(b)) {
        buckets[b] = new Map(buckets[b]);
        copied.add(b);
      }
      if (!buckets[b].has(key)) size += 1;
      buckets[b].set(key, value);
    }
    return copied.size ? new PersistentMap(buckets, size) : this;
  }

  /** This map without `keys`. */
  without(keys) {
    let buckets = null;
    let size = this.size;
    for (const key of keys) {
      const b = bucketOf(key);
      const source = buckets ? buckets[b] : this.buckets[b];
      if (!source.has(key)) continue;
      buckets ??= this.buckets.slice();
      if (buckets[b] === this.buckets[b]) buckets[b] = new Map(buckets[b]);
      buckets[b].delete(key);
      size -= 1;
    }
    return buckets ? new PersistentMap(buckets, size) : this;
  }

  *entries() {
    for (const bucket of this.buckets) yield* bucket;
  }

  *keys() {
    for (const bucket of this.buckets) yield* bucket.keys();
  }

  *values() {
    for (const bucket of this.buckets) yield* bucket.values();
  }

  [Symbol.iterator]() {
    return this.entries();
  }
}
