export * from "./types.js";
export * from "./errors.js";
export { hostFiles } from "./real.js";
export { MemoryFiles, type AddOptions, type FaultOp } from "./memory.js";
export { writeFileAtomic, cleanupTemporaries, writeAll, type AtomicData } from "./atomic.js";
export { walk, type WalkEntry, type WalkOptions, type WalkType } from "./walk.js";
export { tarGz, type TarGz } from "./archive.js";
