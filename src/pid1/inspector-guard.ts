/**
 * Side-effect module: import it first in the entry point so the SIGUSR1 listener exists before any other
 * module's top-level code runs (ESM evaluates imports in order). See signals.ts for why.
 */
import { guardInspectorSignal } from "./signals.js";

guardInspectorSignal();
