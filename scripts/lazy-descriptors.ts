/**
 * Bundled into dist/machined.mjs by scripts/build.mjs in place of the eager descriptor calls of the
 * generated `*_pb.ts` modules: `fileDesc(...)`, `messageDesc(...)`, `enumDesc(...)`, `serviceDesc(...)`
 * run on first use instead of at start-up. Decoding every descriptor up front costs ~100 ms and ~19 MiB
 * (issue 12), and most of them (the resource definitions) are needed only when a COSI reply is encoded.
 *
 * Each generated export becomes a Proxy that builds the real descriptor on first touch and forwards
 * everything to it. Descriptors are only read (protobuf-es compares them by type name, never by
 * identity), so the proxy and the object it stands for are interchangeable.
 */
export function lazyDescriptor<T extends object>(make: () => T): T {
  let real: T | undefined;
  const get = (): T => (real ??= make());
  return new Proxy({} as T, {
    get: (_t, key) => Reflect.get(get(), key),
    has: (_t, key) => Reflect.has(get(), key),
    ownKeys: () => Reflect.ownKeys(get()),
    getOwnPropertyDescriptor: (_t, key) => {
      const d = Reflect.getOwnPropertyDescriptor(get(), key);
      // The empty target has no such property; a proxy may only report configurable ones.
      if (d) d.configurable = true;
      return d;
    },
    getPrototypeOf: () => Reflect.getPrototypeOf(get()),
    set: (_t, key, value) => Reflect.set(get(), key, value),
    defineProperty: (_t, key, attrs) => Reflect.defineProperty(get(), key, attrs),
    deleteProperty: (_t, key) => Reflect.deleteProperty(get(), key),
  });
}
