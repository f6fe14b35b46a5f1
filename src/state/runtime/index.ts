export type {
  Controller,
  ControllerStatus,
  DependencyEdge,
  DependencyEdgeType,
  Input,
  Output,
  ReconcileContext,
  ReconcileResult,
  ResourceInit,
  RuntimeLogger,
} from "./controller.js";
export { ControllerRuntime, type RuntimeOptions } from "./runtime.js";
export { dependencyGraph } from "./graph.js";
