/**
 * The controller dependency graph as `talosctl inspect dependencies` reads it
 * (/inspect.InspectService/ControllerRuntimeDependencies). Edge type names equal the proto enum names
 * (inspect.DependencyEdgeType), so the API layer maps them with `DependencyEdgeType[edgeType]`.
 */
import type { Controller, DependencyEdge } from "./controller.js";

export function dependencyGraph(controllers: Controller[]): DependencyEdge[] {
  const edges: DependencyEdge[] = [];
  const sorted = [...controllers].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const c of sorted) {
    for (const o of c.outputs) {
      edges.push({
        controllerName: c.name,
        edgeType: o.kind === "exclusive" ? "OUTPUT_EXCLUSIVE" : "OUTPUT_SHARED",
        // Outputs are not namespaced: a controller may write its type in any namespace.
        namespace: "",
        type: o.type,
      });
    }
    for (const i of c.inputs) {
      const edge: DependencyEdge = {
        controllerName: c.name,
        edgeType: i.kind === "strong" ? "INPUT_STRONG" : "INPUT_WEAK",
        namespace: i.namespace,
        type: i.type,
      };
      if (i.id !== undefined) edge.id = i.id;
      edges.push(edge);
    }
  }
  return edges;
}
